package peerclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
)

// TestPinnedReadAfterRacedDial: a connection is pooled under the road it
// is on, not under the address its request asked for. A read whose raced
// dial was won by the tailnet left that connection pooled under the lan
// address, and the next read pinned to lan went over the tailnet (issue
// 35, the architecture review's probe).
func TestPinnedReadAfterRacedDial(t *testing.T) {
	serve := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(s.Close)
		return s
	}
	lanSrv, tsSrv := serve("lan"), serve("tailnet")
	lanAddr, tsAddr := strings.TrimPrefix(lanSrv.URL, "http://"), strings.TrimPrefix(tsSrv.URL, "http://")
	var lanDials atomic.Int32
	dialTo := func(addr string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: lanAddr, Dial: func(ctx context.Context) (net.Conn, error) {
		if lanDials.Add(1) == 1 { // silent the first time: the race goes to the tailnet
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
		return dialTo(lanAddr)(ctx)
	}}
	ts := roads.Candidate{Peer: "studio", Road: roads.Tailnet, Address: tsAddr, Dial: dialTo(tsAddr)}
	book := routes.New(time.Now, nil)
	book.Set("studio", []roads.Candidate{lan, ts})
	c := New(Config{Router: routes.NewRouter(book, nil, nil)})
	defer c.CloseAll()
	read := func(cand roads.Candidate) (string, roads.Road) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+cand.Address+"/", nil)
		resp, used, _, err := c.RoundTrip(req, cand)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b), used.Road
	}
	raced := lan
	raced.Next = []roads.Candidate{ts}
	if got, road := read(raced); got != "tailnet" || road != roads.Tailnet {
		t.Fatalf("the raced read: answered by %s over %s, want the tailnet (lan silent)", got, road)
	}
	if got, road := read(lan); got != "lan" || road != roads.LAN {
		t.Errorf("a read pinned to lan after the raced one: answered by %s over %s, want lan", got, road)
	}
	if got, road := read(ts); got != "tailnet" || road != roads.Tailnet {
		t.Errorf("a read on the tailnet: answered by %s over %s", got, road)
	}
}
