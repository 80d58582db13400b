// Package tailnettest runs a real tailnet on loopback for tests: Tailscale's
// test control server and a DERP relay, in-process (loopnet), stopped when
// the test ends.
package tailnettest

import (
	"testing"

	"github.com/delta-roads/delta/gateway/modes/tailnet/loopnet"
)

// Control is a tailnet's control server, with its DERP relay.
type Control struct {
	*loopnet.Net
}

// Options configure Start.
type Options struct {
	// RequireAuth makes nodes log in interactively (there is a login URL).
	RequireAuth bool
}

// Start runs a control server and a DERP relay on 127.0.0.1 until the test
// ends. Every node is reported online.
func Start(t testing.TB, opt Options) *Control {
	t.Helper()
	n, err := loopnet.Start(loopnet.Options{RequireAuth: opt.RequireAuth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return &Control{Net: n}
}
