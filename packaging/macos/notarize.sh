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
# At most 35 minutes (issue 64, M10): a slow queue otherwise ran into the
# job's limit, and the log said only "cancelled", with no submission id.
submitted=yes
xcrun notarytool submit "$pkg" "$@" --wait --timeout 35m --output-format json >"$verdict" || submitted=no
if ! id=$(go run ./packaging/cmd/stage notarized "$verdict"); then
	if [ -n "$id" ] && grep -q '"status"[[:space:]]*:[[:space:]]*"In Progress"' "$verdict"; then
		echo "notarize.sh: Apple has not finished with submission $id within 35 minutes; follow it with xcrun notarytool info $id (and the same AUTH), and once it is Accepted run xcrun stapler staple $pkg: no new submission is needed" >&2
	elif [ -n "$id" ]; then
		echo "notarize.sh: Apple's log of submission $id:" >&2
		xcrun notarytool log "$id" "$@" >&2 || true
	fi
	if [ "$submitted" = no ]; then
		cat "$verdict" >&2
		echo "notarize.sh: notarytool submit $pkg failed (above)" >&2
	fi
	exit 1
fi
echo "notarize.sh: submission $id accepted"
xcrun stapler staple "$pkg"
xcrun stapler validate "$pkg"
