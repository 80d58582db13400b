package tailnet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestRereadDue: a running node's timed re-read of the tailnet's status
// is made only when something crossed the tailnet road since the last one
// (a use or a probe answered), while an online node has not answered
// hello, or rescanIdle after the last; before the node runs, always.
func TestRereadDue(t *testing.T) {
	book := routes.New(nil, nil)
	tail := roads.Candidate{Peer: "studio", Road: roads.Tailnet, Address: "100.64.0.2:7421"}
	book.Set("studio", []roads.Candidate{tail})
	studio := &peer{node: "n2", online: true, name: "studio", hello: &Hello{Name: "studio"}}
	n := &Node{book: book, backend: "Starting",
		peers: map[string]*peer{"studio": studio}, byNode: map[tailcfg.StableNodeID]*peer{"n2": studio}}

	read := time.Now()
	if !n.rereadDue(read) {
		t.Error("a node not running yet: the timed re-read is skipped; want it made")
	}
	n.backend = "Running"
	if n.rereadDue(read) {
		t.Error("running, nothing crossed the tailnet since the last re-read: want it skipped")
	}
	if !n.rereadDue(read.Add(-rescanIdle)) {
		t.Errorf("running, the last re-read %v ago: want it made", rescanIdle)
	}

	// An online node that has not answered hello is asked again at the
	// re-read, when it is due to be asked (helloRetry).
	phone := &peer{node: "n3", online: true}
	n.byNode["n3"] = phone
	if !n.rereadDue(read) {
		t.Error("an online node never asked for hello: want the re-read made")
	}
	phone.helloAt, phone.fails = time.Now(), 9
	if n.rereadDue(read) {
		t.Error("an online node where nothing answered 9 hellos, the last just now: want the re-read skipped")
	}
	phone.helloAt = time.Now().Add(-helloRetry(9, false))
	if !n.rereadDue(read) {
		t.Errorf("the same, the last hello %v ago: want the re-read made", helloRetry(9, false))
	}
	phone.online = false
	if n.rereadDue(read) {
		t.Error("that node offline: want the re-read skipped")
	}

	// The tailnet road answered (a use or a probe) after the last
	// re-read: its path may have changed.
	book.Report(tail, 3*time.Millisecond, nil)
	if !n.rereadDue(read) {
		t.Error("the tailnet road answered since the last re-read: want it made")
	}
	if n.rereadDue(time.Now()) {
		t.Error("nothing since a re-read made after that answer: want it skipped")
	}
}

// TestHelloRetry: hellos that failed are asked again at 1, 2, 4 … s, at
// most 30 s apart while a door refused them (a Delta that does not know
// this one yet), at most 30 minutes apart otherwise (a phone, a computer
// without Delta).
func TestHelloRetry(t *testing.T) {
	for _, c := range []struct {
		fails   int
		refused bool
		want    time.Duration
	}{
		{0, true, 0}, {0, false, 0},
		{1, true, time.Second}, {1, false, time.Second},
		{3, false, 4 * time.Second}, {6, true, 30 * time.Second}, {6, false, 32 * time.Second},
		{7, true, 30 * time.Second}, {7, false, 64 * time.Second},
		{11, false, 1024 * time.Second}, {12, false, 30 * time.Minute}, {1000, false, 30 * time.Minute}, {1000, true, 30 * time.Second},
	} {
		if got := helloRetry(c.fails, c.refused); got != c.want {
			t.Errorf("%d failures, refused at a door %v: ask again after %v, want %v", c.fails, c.refused, got, c.want)
		}
	}
}

// TestHelloAskedWhenADeltaCalls: a node that never answered hello, whose
// retry is far off, is asked at once when a request of a Delta's
// upkeep (hello, a probe, a ticket) arrives from it at the tailnet door;
// any other request, or one from a node that answered, changes nothing.
func TestHelloAskedWhenADeltaCalls(t *testing.T) {
	phone := &peer{node: "n3", online: true, helloAt: time.Now(), fails: 12}
	studio := &peer{node: "n2", online: true, name: "studio", hello: &Hello{Name: "studio"}}
	n := &Node{book: routes.New(nil, nil), kick: make(chan struct{}, 1),
		peers: map[string]*peer{"studio": studio}, byNode: map[tailcfg.StableNodeID]*peer{"n2": studio, "n3": phone}}
	kicked := func() bool {
		select {
		case <-n.kick:
			return true
		default:
			return false
		}
	}
	n.peerUpkeep(httptest.NewRequest(http.MethodPost, "/v1/peers/x/app/call", nil), "n3")
	if kicked() || phone.fails != 12 {
		t.Fatalf("an app's request from the node: kicked %v, failures %d; want neither changed", kicked(), phone.fails)
	}
	n.peerUpkeep(httptest.NewRequest(http.MethodGet, proto.PathHello, nil), "n2")
	if kicked() {
		t.Fatal("hello asked of a node that answered it already: want no rescan")
	}
	n.peerUpkeep(httptest.NewRequest(http.MethodGet, proto.PathHello, nil), "n3")
	if !kicked() || phone.fails != 0 || !helloDue(phone, time.Now()) {
		t.Fatalf("hello asked by the node: kicked %v, failures %d; want a rescan with its hello due", kicked(), phone.fails)
	}
}

// TestHelloRefused: getHello tells a door's refusal (a Delta that does
// not know this one yet) from no answer (no listener: no Delta there)
// and from another answer (something else listening there).
func TestHelloRefused(t *testing.T) {
	n := &Node{httc: &http.Client{}}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()
	serve := func(status int) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, http.StatusText(status), status)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	for _, c := range []struct {
		what, addr string
		refused    bool
	}{
		{"nothing listening", nothing, false},
		{"a door's 403", serve(http.StatusForbidden), true},
		{"a door's 401", serve(http.StatusUnauthorized), true},
		{"another server's 404", serve(http.StatusNotFound), false},
	} {
		_, refused, err := n.getHello(context.Background(), &peer{tsAddr: c.addr})
		if err == nil || refused != c.refused {
			t.Errorf("%s: refused %v, err %v; want refused %v and an error", c.what, refused, err, c.refused)
		}
	}
}
