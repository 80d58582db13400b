#!/bin/sh
# Removes Delta from this Mac: stops it for every user, removes the
# LaunchAgent and Delta.app and forgets the package. Each person's state
# folder (its journal, identity and logs) is kept unless --purge is given;
# then the invoking user's is removed too.
#
#   sudo /Applications/Delta.app/Contents/Resources/uninstall.sh [--purge]
#   delta uninstall [--purge]          (the same, asking for sudo)
set -u
label=com.delta-roads.delta
purge=no
for arg in "$@"; do
	case $arg in
	--purge) purge=yes ;;
	*) echo "uninstall: unknown argument $arg (usage: uninstall.sh [--purge])" >&2; exit 2 ;;
	esac
done
if [ "$(id -u)" != 0 ]; then
	echo "uninstall: run it as root: sudo $0 $*" >&2
	exit 1
fi
# Every user's Delta: the LaunchAgent of each GUI session (Fast User
# Switching keeps several; each has a loginwindow of its own) and any
# Delta started by hand from the bundle.
# console_uid prints the uid of the user at the console, if any.
console_uid() {
	c=$(stat -f%Su /dev/console 2>/dev/null || true)
	case $c in "" | root | loginwindow) ;; *) id -u "$c" ;; esac
}
uids=$({
	ps -axo uid=,comm= | awk '$1 != 0 && ($2 ~ /(^|\/)loginwindow$/ || $2 ~ /\/Delta\.app\/Contents\/MacOS\/Delta$/) {print $1}'
	console_uid
} | sort -un)
for uid in $uids; do
	launchctl bootout "gui/$uid/$label" 2>/dev/null || true
	pkill -TERM -U "$uid" -x Delta 2>/dev/null || true
done
# Nothing is removed before every Delta has stopped (issue 64, M12: the
# files went while Delta was still recording its calls in flight), as
# preinstall waits; one that has not stopped within 20 s is killed.
for uid in $uids; do
	i=0
	while pgrep -U "$uid" -x Delta >/dev/null 2>&1; do
		if [ "$i" -ge 40 ]; then
			echo "uninstall: Delta of uid $uid did not stop within 20 s; killing it"
			pkill -KILL -U "$uid" -x Delta 2>/dev/null || true
			break
		fi
		sleep 0.5
		i=$((i + 1))
	done
done
rm -f "/Library/LaunchAgents/$label.plist"
# The command line's links, where they are Delta's (never another
# program's delta). DELTA_VOLUME stands in for the volume in tests.
app=/Applications/Delta.app/Contents/MacOS/Delta
for l in "${DELTA_VOLUME:-}/usr/local/bin/delta" "${DELTA_VOLUME:-}/usr/local/bin/delta-roads"; do
	if [ -L "$l" ] && [ "$(readlink "$l")" = "$app" ]; then
		rm -f "$l"
	fi
done
rm -rf /Applications/Delta.app
pkgutil --forget "$label.pkg" >/dev/null 2>&1 || true
echo "uninstall: removed Delta.app and its LaunchAgent"
if [ "$purge" = yes ]; then
	who=${SUDO_USER:-$(stat -f%Su /dev/console 2>/dev/null || true)}
	# The whole path, spaces and all: dscl prints "NFSHomeDirectory: /Users/jo",
	# or, for a value with a space, the value on the next line, indented.
	home=$(dscl . -read "/Users/$who" NFSHomeDirectory 2>/dev/null | sed -e 's/^NFSHomeDirectory:[[:space:]]*//' -e 's/^ //' | awk 'NF' | head -n 1)
	if [ -n "$home" ] && [ -d "$home" ]; then
		rm -rf "$home/Library/Application Support/Delta" "$home/Library/Logs/Delta"
		echo "uninstall: removed $who's state folder and logs"
	fi
else
	echo "uninstall: kept each person's state folder (~/Library/Application Support/Delta); --purge removes the invoking user's"
fi
