package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/tailnettest"
)

type statusView struct {
	Self struct {
		Name   string
		NodeID string `json:"node_id"`
	}
	Tailnet struct {
		State     string
		Message   string
		LogUpload bool `json:"log_upload"`
	}
	Peers []struct {
		Name  string
		Road  string
		Roads []struct {
			Road, State, LastError string
			CheckedAt              time.Time `json:"checked_at"`
		}
	}
	Sessions  int
	Transfers []struct {
		Kind, Peer, App, Path, Road string
		Received                    int64   `json:"received_bytes"`
		Sent                        int64   `json:"sent_bytes"`
		Rate                        float64 `json:"bytes_per_second"`
	}
}

func (p *proc) status(t *testing.T) statusView {
	t.Helper()
	var st statusView
	r := p.c.Must(t, "GET", "/v1/status", nil)
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatalf("status: %v: %s", err, r.Body)
	}
	return st
}

// TestTailnetMode runs the delta binary without static peers: it joins the
// tailnet at --control-url, finds the other computer, and carries calls on
// the tailnet road and on the lan road (pinned TLS).
func TestTailnetMode(t *testing.T) {
	c := tailnettest.Start(t, tailnettest.Options{})
	laptop, studio := tailnetPair(t, c)
	app := gatewaytest.StartOwnerApp(t)
	studio.register(t, "notes", app.URL)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/t", []byte("over the tailnet"), "X-Delta-Route", "tailnet")
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "tailnet" || string(r.Body) != "over the tailnet" {
		t.Fatalf("call over the tailnet: %d %q %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
	}
	gatewaytest.WaitFor(t, 60*time.Second, "the lan road up", func() bool {
		for _, p := range laptop.status(t).Peers {
			for _, rd := range p.Roads {
				if p.Name == "studio" && rd.Road == "lan" && rd.State == "up" {
					return true
				}
			}
		}
		return false
	})
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/answer/l", []byte("over the lan"), "X-Delta-Route", "lan")
	if r.Status != 201 || r.Header.Get("X-Delta-Route") != "lan" {
		t.Fatalf("call over the lan: %d %q %s", r.Status, r.Header.Get("X-Delta-Route"), r.Body)
	}
	if st := laptop.status(t); !strings.HasPrefix(st.Self.NodeID, "TESTCTRL") {
		t.Errorf("laptop's node id %q is not its tailnet stable node ID", st.Self.NodeID)
	}

	// Everything an app sends, on both of these roads: a call whose body
	// streams (after studio's 100 Continue, its count the trailer), an
	// answer that streams, a session.
	rich := startRichApp(t)
	studio.register(t, "rich", rich.URL)
	big := bytes.Repeat([]byte("t"), 3<<20)
	sum := sha256.Sum256(big)
	want := fmt.Sprintf("%d %s", len(big), hex.EncodeToString(sum[:]))
	for _, road := range []string{"tailnet", "lan"} {
		id := "big-over-" + road
		r := laptop.c.Must(t, "PUT", "/v1/peers/studio/rich/upload", big, "X-Delta-Route", road, "X-Delta-Request-Id", id)
		if r.Status != 201 || string(r.Body) != want || rich.upload(id) != want || r.Header.Get("X-Delta-Route") != road {
			t.Errorf("a 3 MiB call over the %s: %d via %q, %q", road, r.Status, r.Header.Get("X-Delta-Route"), r.Body)
		}
		// 750 ms in all, past the 0.5 s timeout, which bounds each silence
		// (150 ms), not the whole answer.
		r = laptop.c.Must(t, "GET", "/v1/peers/studio/rich/stream?n=5&every=150&size=100", nil, "X-Delta-Route", road, "X-Delta-Timeout", "0.5")
		if r.Status != 200 || len(r.Body) != 500 {
			t.Errorf("a streamed answer over the %s: %d, %d bytes", road, r.Status, len(r.Body))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ws, resp, err := websocket.Dial(ctx, strings.Replace(laptop.c.URL, "http://", "ws://", 1)+"/v1/peers/studio/rich/ws",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + laptop.c.Token}, "X-Delta-Route": {road}}})
		if err != nil {
			t.Errorf("a session over the %s: %v", road, err)
			cancel()
			continue
		}
		ws.Write(ctx, websocket.MessageText, []byte("hello "+road))
		_, b, err := ws.Read(ctx)
		if err != nil || string(b) != "hello "+road || resp.Header.Get("X-Delta-Route") != road {
			t.Errorf("a session over the %s: %q %v via %q", road, b, err, resp.Header.Get("X-Delta-Route"))
		}
		ws.Close(websocket.StatusNormalClosure, "")
		cancel()
	}
	// Without --verbose, Tailscale's own lines (tsnet's Logf and what its
	// packages write through Go's standard log) go to tailscale.log, not
	// to stderr: every line there is Delta's own log.
	for _, p := range []*proc{laptop, studio} {
		for line := range strings.Lines(p.log.String()) {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "time=") {
				t.Errorf("%s wrote a line that is not its own log to stderr without --verbose: %q", p.name, line)
			}
		}
	}
}

// tailnetPair starts "laptop" and "studio" as delta processes in tailnet
// mode on control server c, each with its lan road on a loopback address,
// and waits until laptop has found studio.
func tailnetPair(t *testing.T, c *tailnettest.Control) (laptop, studio *proc) {
	t.Helper()
	gatewaytest.NeedLoopback(t, "127.0.0.2", "127.0.0.3")
	root := t.TempDir()
	var procs []*proc
	for i, name := range []string{"laptop", "studio"} {
		ip := []string{"127.0.0.2", "127.0.0.3"}[i]
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		p := &proc{name: name, dir: filepath.Join(root, name),
			args: []string{"--control-url", c.URL, "--hostname", name, "--lan-addrs", ip, "--lan-port", port}}
		p.start(t)
		procs = append(procs, p)
	}
	laptop, studio = procs[0], procs[1]
	for _, p := range procs {
		gatewaytest.WaitFor(t, 60*time.Second, p.name+" logged in", func() bool { return p.status(t).Tailnet.State == "Running" })
	}
	c.SameUserAll()
	laptop.waitPeer(t, "studio")
	return laptop, studio
}

// waitPeer waits until p has found peer on the tailnet (it has a road).
func (p *proc) waitPeer(t *testing.T, peer string) {
	t.Helper()
	gatewaytest.WaitFor(t, 60*time.Second, p.name+" to find "+peer, func() bool {
		for _, ps := range p.status(t).Peers {
			if ps.Name == peer && ps.Road != "" {
				return true
			}
		}
		return false
	})
}

// roadState reads what p believes of its road to peer.
func (p *proc) roadState(t *testing.T, peer, road string) string {
	for _, ps := range p.status(t).Peers {
		if ps.Name == peer {
			for _, r := range ps.Roads {
				if r.Road == road {
					return r.State
				}
			}
			return "absent"
		}
	}
	return "no peer"
}

func (p *proc) waitRoad(t *testing.T, peer, road, state string) {
	t.Helper()
	gatewaytest.WaitFor(t, 60*time.Second, fmt.Sprintf("%s's %s road to %s %s", p.name, road, peer, state), func() bool {
		s := p.roadState(t, peer, road)
		return s == state || state == "down" && s == "absent"
	})
}
