#!/bin/sh
# The release workflow's smoke install on a macOS runner (run from the
# repository's root after make pkg):
#
#   packaging/macos/smoke.sh build/Delta-VERSION.pkg
#
# Before installing, it writes a static-mode config.json with the built
# binary (or, in a job that did not build, the package's own) (delta init --static: one peer, which need not exist), so that
# the Delta the LaunchAgent starts never contacts Tailscale's control
# server; the names of Tailscale's servers also point at loopback for the
# run. Then it installs the package and checks that the LaunchAgent is
# loaded and the local API answers within 30 s, in static mode; then
# uninstalls and checks that the bundle, the agent's plist and the loaded
# agent are gone.
set -eu
[ "$#" = 1 ] || { echo "usage: $0 PKG" >&2; exit 2; }
pkg=$1
delta=/Applications/Delta.app/Contents/MacOS/Delta
label=com.delta-roads.delta
uid=$(id -u)
state="$HOME/Library/Application Support/Delta"
fail() {
	echo "smoke.sh: $*" >&2
	[ ! -f "$HOME/Library/Logs/Delta/delta.log" ] || tail -40 "$HOME/Library/Logs/Delta/delta.log" >&2
	exit 1
}
# within SECONDS WHAT CMD...: CMD succeeds within SECONDS, or the run fails naming WHAT.
within() {
	n=$1 what=$2
	shift 2
	i=0
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt "$n" ] || fail "$what: not within $n s"
		sleep 1
	done
	echo "smoke.sh: $what"
}

[ ! -e "$state/config.json" ] || fail "$state/config.json exists already: this is not a fresh runner"
# The binary that writes the config: the build's, or (a job that did not
# build, such as the macos-15 smoke) the one inside the package itself.
bin=build/macos/delta
if [ ! -x "$bin" ]; then
	x=$(mktemp -d)/pkg
	pkgutil --expand-full "$pkg" "$x" || fail "pkgutil --expand-full $pkg failed"
	bin="$x/Delta-component.pkg/Payload/Applications/Delta.app/Contents/MacOS/Delta"
	[ -x "$bin" ] || fail "the package holds no $bin"
fi
"$bin" init --static --name ci-mac --peer nowhere=127.0.0.1:9
printf '127.0.0.1 controlplane.tailscale.com login.tailscale.com log.tailscale.io log.tailscale.com derp1.tailscale.com\n' | sudo tee -a /etc/hosts >/dev/null

sudo installer -pkg "$pkg" -target /
within 30 "the LaunchAgent is loaded" launchctl print "gui/$uid/$label"
within 30 "the local API answers" "$delta" status
"$delta" status | grep -q "static mode" || fail "the installed Delta is not in static mode: $("$delta" status 2>&1)"

"$delta" uninstall --yes
[ ! -e /Applications/Delta.app ] || fail "uninstall left /Applications/Delta.app"
[ ! -e "/Library/LaunchAgents/$label.plist" ] || fail "uninstall left /Library/LaunchAgents/$label.plist"
if launchctl print "gui/$uid/$label" >/dev/null 2>&1; then
	fail "uninstall left the LaunchAgent loaded"
fi
echo "smoke.sh: installed, answered in static mode, uninstalled"
