#!/bin/sh
# packaging/macos/release-notes.sh VERSION SHA256FILE: the text of a GitHub
# Release of Delta-VERSION.pkg, for the person who downloads it: which
# macOS, that it is universal, how to install (a double-click, the two
# things macOS asks), how to uninstall, and the package's SHA-256 (read
# from SHA256FILE, as shasum -a 256 wrote it).
set -eu
version=$1
sum=$(cut -d' ' -f1 "$2")
case $sum in
*[!0-9a-f]* | "") echo "release-notes.sh: $2 holds no SHA-256" >&2; exit 1 ;;
esac
cat <<EOF
Delta $version for macOS 12 (Monterey) or later, one package for Apple silicon and Intel Macs (universal), signed with a Developer ID and notarized by Apple.

**Install:** download \`Delta-$version.pkg\` below and double-click it. The installer asks for an administrator's password. Δ then appears in the menu bar and starts at each login. macOS asks two things the first time:

1. **"Delta" would like to find devices on your local networks:** allow it. Without it only the tailnet road works, not the cable or the home network.
2. **Notifications:** allow them, so that a write that needs you can tell you.

**Uninstall:** in Terminal, \`sudo "/Applications/Delta.app/Contents/Resources/uninstall.sh"\`. It stops Delta and removes it, and keeps your data in ~/Library/Application Support/Delta.

**Check the download:** \`shasum -a 256 Delta-$version.pkg\` prints

    $sum

(also in \`Delta-$version.pkg.sha256\` below).
EOF
