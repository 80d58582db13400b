package owner

import "testing"

// TestForwardedChecks: what the owner app is told of its client is only
// what a Host, a path prefix and an obfuscated node may be.
func TestForwardedChecks(t *testing.T) {
	for p, ok := range map[string]bool{"/v1/peers/studio/notes": true, "/v1/peers/stu%64io/n": true, "/": false, "": false,
		"v1/peers": false, "/a b": false, "/a\r\nX-Evil: 1": false, "/a?b": false} {
		if validPrefix(p) != ok {
			t.Errorf("validPrefix(%q) = %v", p, !ok)
		}
	}
	for n, ok := range map[string]bool{"laptop": true, "my-mac.local_2": true, "": false, "a b": false, "a;b": false, `a"b`: false} {
		if obfuscated(n) != ok {
			t.Errorf("obfuscated(%q) = %v", n, !ok)
		}
	}
}
