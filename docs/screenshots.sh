#!/bin/sh
# Draws docs/screenshots/*.png: the tray's menu in xfce4-panel, a
# notification from xfce4-notifyd and the status page in Chromium, on a
# virtual X screen. Needs (Debian): xvfb xfce4-panel xfce4-notifyd xdotool
# imagemagick dbus-x11 chromium. Run from the repository's root.
set -eu
out="$(pwd)/docs/screenshots"
work="$(mktemp -d)"
# Keep Go's caches where they are: HOME moves to an empty folder for the
# panel's settings.
GOPATH="$(go env GOPATH)" GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)"
export GOPATH GOCACHE GOMODCACHE HOME="$work/home" DISPLAY=:97
mkdir -p "$HOME" "$out"
Xvfb "$DISPLAY" -screen 0 1280x800x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
xvfb=$!
cleanup() {
	kill "$panel" "$notifyd" 2>/dev/null || true
	kill "$DBUS_SESSION_BUS_PID" "$xvfb" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
while ! xdpyinfo >/dev/null 2>&1; do sleep 0.1; done
eval "$(dbus-launch --sh-syntax)"
xfce4-panel --disable-wm-check >"$work/panel.log" 2>&1 &
panel=$!
/usr/lib/x86_64-linux-gnu/xfce4/notifyd/xfce4-notifyd >"$work/notifyd.log" 2>&1 &
notifyd=$!
sleep 3 # the panel draws itself
DELTA_SCREENSHOTS="$out" go test ./app -run '^TestScreenshots$' -count=1 -v
