// Package tailnettest runs a real tailnet on loopback for tests: Tailscale's
// test control server and a DERP+STUN server, in-process.
package tailnettest

import (
	"net/http/httptest"
	"testing"

	"tailscale.com/net/netns"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
	"tailscale.com/types/logger"
)

// Control is a tailnet's control server, with its DERP relay.
type Control struct {
	URL    string
	Server *testcontrol.Server
	owner  tailcfg.UserID
}

// Options configure Start.
type Options struct {
	// RequireAuth makes nodes log in interactively (there is a login URL).
	RequireAuth bool
}

// Start runs a control server and a DERP+STUN server on 127.0.0.1 until the
// test ends. Every node is reported online.
func Start(t testing.TB, opt Options) *Control {
	t.Helper()
	netns.SetEnabled(false)
	t.Cleanup(func() { netns.SetEnabled(true) })
	derpMap := integration.RunDERPAndSTUN(t, logger.Discard, "127.0.0.1")
	s := &testcontrol.Server{DERPMap: derpMap, AllOnline: true, Logf: logger.Discard, RequireAuth: opt.RequireAuth,
		DNSConfig: &tailcfg.DNSConfig{Proxied: true}, MagicDNSDomain: "tail-scale.ts.net"}
	s.HTTPTestServer = httptest.NewUnstartedServer(s)
	s.HTTPTestServer.Start()
	t.Cleanup(s.HTTPTestServer.Close)
	return &Control{URL: s.HTTPTestServer.URL, Server: s}
}

// SameUser makes the nodes with these keys computers of one tailnet user,
// as a person's own computers are (the test control server gives every new
// node a user of its own). The first call picks the user.
func (c *Control) SameUser(keys ...key.NodePublic) {
	for _, k := range keys {
		n := c.Server.Node(k)
		if n == nil {
			continue
		}
		if c.owner == 0 {
			c.owner = n.User
		}
		if n.User != c.owner {
			n.User = c.owner
			c.Server.UpdateNode(n)
		}
	}
}

// SameUserAll does SameUser for every node registered so far.
func (c *Control) SameUserAll() {
	var keys []key.NodePublic
	for _, n := range c.Server.AllNodes() {
		keys = append(keys, n.Key)
	}
	c.SameUser(keys...)
}
