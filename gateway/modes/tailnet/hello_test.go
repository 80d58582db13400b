package tailnet_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"tailscale.com/tsnet"
	"tailscale.com/types/logger"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestHelloToANodeWithoutDelta: a node of the same user with no Delta (a
// phone: a bare tsnet node, nothing on Delta's port) is asked for hello
// less and less often, past the 30 retries' cap that a Delta's refusal
// keeps; and once a Delta there asks this one for hello, it is asked at
// once and found, long before its next retry. Hello's retries count in
// 5 ms here, not seconds.
func TestHelloToANodeWithoutDelta(t *testing.T) {
	defer tailnet.SetHelloRetryUnit(5 * time.Millisecond)()
	l := newLab(t)
	laptop := l.start("laptop", "127.0.0.2", nodeOpt{})
	phone := &tsnet.Server{Dir: t.TempDir(), ControlURL: l.controlURL, Hostname: "phone", Logf: logger.Discard, UserLogf: logger.Discard}
	defer phone.Close()
	if _, err := phone.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	pc, err := phone.LocalClient()
	if err != nil {
		t.Fatal(err)
	}
	pst, err := pc.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l.sameUser(laptop)
	l.SameUser(pst.Self.PublicKey)

	// The hellos laptop sends (all of them to phone: its only other node),
	// each seen when it leaves.
	hellos := func() int {
		m := string(laptop.c.Must(t, "GET", "/metrics", nil).Body)
		line := `delta_upkeep_requests_total{kind="hello"} `
		i := strings.Index(m, line)
		if i < 0 {
			t.Fatalf("no %s in the metrics", line)
		}
		var v int
		fmt.Sscan(m[i+len(line):], &v)
		return v
	}
	var at []time.Time // when each hello was seen leaving
	seen := func(n int) func() bool {
		return func() bool {
			for h := hellos(); len(at) < h; {
				at = append(at, time.Now())
			}
			return len(at) >= n
		}
	}
	gatewaytest.WaitFor(t, 30*time.Second, "laptop's 10 hellos to phone", seen(10))
	// After 9 failures the next is 5 ms << 8 = 1.28 s later; a Delta's
	// refusal would have capped it at 30 units, 150 ms. (Each hello is
	// seen when /metrics is next read, so the bound leaves room for that.)
	if gap := at[9].Sub(at[8]); gap < 700*time.Millisecond {
		t.Fatalf("the 10th hello %v after the 9th; want 1.28 s, past the cap of a door's refusal (150 ms)", gap)
	}
	gatewaytest.WaitFor(t, 30*time.Second, "laptop's 12th hello to phone", seen(12))
	// The next would be 5.12 s after the 12th.

	// A Delta starts on phone: it serves hello on Delta's port and asks
	// laptop for its own.
	ln, err := phone.Listen("tcp", ":"+strconv.Itoa(tailnet.DefaultTailnetPort))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(tailnet.Hello{Name: "phone", NodeID: string(pst.Self.ID), Pin: strings.Repeat("ab", 32)})
	})}
	go srv.Serve(ln)
	defer srv.Close()
	lst, err := laptop.n.LocalClient().Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	resp, err := phone.HTTPClient().Get("http://" + net.JoinHostPort(lst.Self.TailscaleIPs[0].String(), strconv.Itoa(tailnet.DefaultTailnetPort)) + proto.PathHello)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("laptop's hello to phone: %d", resp.StatusCode)
	}
	gatewaytest.WaitFor(t, 30*time.Second, "laptop to find phone", func() bool { return laptop.n.Known("phone") })
	if took := time.Since(asked); took > 3*time.Second {
		t.Errorf("laptop found phone %v after phone asked for its hello; want at once, not at its next retry", took)
	}
}
