package netwatch

import (
	"fmt"
	"os"
	"strings"
)

// ComputerName is this computer's name for the tailnet and for static
// mode: on macOS its LocalHostName (System Settings › General › Sharing,
// "Alices-MacBook-Pro"), else its ComputerName made into a DNS label,
// rather than the host name, which a Mac may take from the network's
// DHCP and change with it; elsewhere the host name's first label.
func ComputerName() (string, error) {
	local, computer := macNames()
	h, err := os.Hostname()
	if name := pickName(local, computer, h); name != "" {
		return name, nil
	}
	if err != nil {
		return "", fmt.Errorf("the host name is unknown: %w", err)
	}
	return "", fmt.Errorf("no LocalHostName, ComputerName or host name (%q) makes a DNS label", h)
}

// pickName chooses among macOS's LocalHostName and ComputerName and the
// host name, the first that makes a DNS label. Pure, for tests.
func pickName(localHostName, computerName, hostname string) string {
	host, _, _ := strings.Cut(hostname, ".")
	for _, s := range []string{localHostName, computerName, host} {
		if l := label(s); l != "" {
			return l
		}
	}
	return ""
}

// label makes s a DNS label as macOS makes a LocalHostName of a
// ComputerName: spaces and underscores become '-', other characters
// outside A-Z a-z 0-9 '-' go ("Alice’s MacBook Pro" → "Alices-MacBook-Pro"),
// no '-' at either end, at most 63 characters.
func label(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == ' ' || r == '_':
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}
