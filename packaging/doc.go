// Package packaging is how Delta is installed: the macOS Delta.app bundle
// and .pkg (Info.plist, the LaunchAgent, Distribution.xml, the component
// plist, the pre- and postinstall scripts, the uninstall script, the app
// icon as .icns) and the Linux .deb (a systemd user unit and an XDG
// autostart entry). Stage lays out a package's payload from a built
// binary, the one layout both the macOS build (packaging/macos/build.sh,
// on a Mac) and `make deb` use, and the tests check on Linux (`make
// package-check`): every plist parses with its required keys, every script
// passes shellcheck, Distribution.xml is well-formed and names the right
// package and architectures, and the staged trees have the right layout and
// modes.
package packaging
