package kit_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestKitDeps: the kit compiles nothing of the daemon — of Delta's own
// packages only the local API's words (localapi) and the road facts it
// shares with Delta (roadfacts: timeouts, interface binding, the pin
// check), and neither SQLite nor Tailscale.
func TestKitDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"github.com/delta-roads/delta/kit", "github.com/delta-roads/delta/api/localapi", "github.com/delta-roads/delta/api/roadfacts"}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/delta-roads/") && !slices.Contains(allowed, p) || strings.Contains(p, "sqlite") || strings.Contains(p, "tailscale") {
			t.Errorf("the kit compiles %s", p)
		}
	}
}
