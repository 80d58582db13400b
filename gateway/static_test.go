package gateway_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// cable is a TCP forwarder on a fixed loopback port that can be pulled and
// put back: the road between two static Deltas.
type cable struct {
	addr, to string
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
}

func newCable(t *testing.T, to string) *cable {
	c := &cable{to: to}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	c.serve(ln)
	t.Cleanup(c.pull)
	return c
}

func (c *cable) serve(ln net.Listener) {
	c.mu.Lock()
	c.ln = ln
	c.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", c.to)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
}

// pull closes the listener and every connection: connects are refused.
func (c *cable) pull() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// plug listens on the same address again.
func (c *cable) plug(t *testing.T) {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.serve(ln)
}

// TestStaticPeerBackAsksAtOnce: when a static peer answers again after
// its road was down, the reconciler asks it about the unknown calls at
// once, not at the next step of its backoff (an hour here).
func TestStaticPeerBackAsksAtOnce(t *testing.T) {
	var road *cable
	laptop, studio := pair(t, func(n *node) {
		if n.name == "laptop" {
			n.cfg.Backoff = []time.Duration{time.Hour}
			road = newCable(t, n.otherAddr)
			n.peers(map[string]map[string]string{"studio": {"lan": road.addr}})
		}
	})
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/apply-then-sleep/k", []byte("x"), "X-Delta-Request-Id", "back-1", "X-Delta-Timeout", "0.3")
	if r.Outcome() != "outcome_unknown" {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	road.pull()
	app.Release("/apply-then-sleep/k")
	studio.waitReceiptDone(t, "node-laptop", "back-1")
	if r := laptop.c.Must(t, "GET", "/v1/peers/studio/notes/x", nil); r.Outcome() != "unavailable" {
		t.Fatalf("a read over the pulled road: %d %s", r.Status, r.Body)
	}
	road.plug(t)
	gatewaytest.WaitFor(t, 15*time.Second, "the call to settle once studio answers again", func() bool {
		return laptop.c.GetCall(t, "back-1", 0).State == "carried_out"
	})
}
