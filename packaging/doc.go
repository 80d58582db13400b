// Package packaging will hold the macOS .pkg (LaunchAgent, scripts,
// Distribution.xml) and the Linux systemd user unit, with tests that check
// them on Linux. Empty until packaging lands.
package packaging
