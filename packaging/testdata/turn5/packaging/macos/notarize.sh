#!/bin/sh
# Notarizes a .pkg and staples the ticket (build.sh pkg runs it):
#
#   packaging/macos/notarize.sh PKG AUTH...
#
# AUTH is notarytool's: --keychain-profile NAME, or --apple-id ID
# --team-id TEAM --password PASSWORD. notarytool exits 0 whenever Apple
# gave a verdict, Invalid included, so the JSON verdict is read (stage
# notarized, tested on recorded answers); on anything but Accepted,
# Apple's log for the submission is printed and this fails.
set -eu
[ "$#" -ge 2 ] || { echo "usage: $0 PKG AUTH..." >&2; exit 2; }
pkg=$1
shift
verdict=$(mktemp)
trap 'rm -f "$verdict"' EXIT
if ! xcrun notarytool submit "$pkg" "$@" --wait --output-format json >"$verdict"; then
	cat "$verdict" >&2
	echo "notarize.sh: notarytool submit $pkg failed (above)" >&2
	exit 1
fi
if ! id=$(go run ./packaging/cmd/stage notarized "$verdict"); then
	if [ -n "$id" ]; then
		echo "notarize.sh: Apple's log of submission $id:" >&2
		xcrun notarytool log "$id" "$@" >&2 || true
	fi
	exit 1
fi
echo "notarize.sh: submission $id accepted"
xcrun stapler staple "$pkg"
xcrun stapler validate "$pkg"
