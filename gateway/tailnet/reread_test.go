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

	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/routes"
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
	phone.helloAt, phone.fails, phone.noDoor = time.Now(), 9, true
	if n.rereadDue(read) {
		t.Error("an online node where nothing answered 9 hellos, the last just now: want the re-read skipped")
	}
	phone.helloAt = time.Now().Add(-helloRetry(9, true))
	if !n.rereadDue(read) {
		t.Errorf("the same, the last hello %v ago: want the re-read made", helloRetry(9, true))
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
// most 30 s apart while a door answered (a Delta that does not know this
// one yet), at most 30 minutes apart when nothing answered (a phone, a
// computer without Delta).
func TestHelloRetry(t *testing.T) {
	for _, c := range []struct {
		fails  int
		noDoor bool
		want   time.Duration
	}{
		{0, false, 0}, {0, true, 0},
		{1, false, time.Second}, {1, true, time.Second},
		{3, true, 4 * time.Second}, {6, false, 30 * time.Second}, {6, true, 32 * time.Second},
		{7, false, 30 * time.Second}, {7, true, 64 * time.Second},
		{11, true, 1024 * time.Second}, {12, true, 30 * time.Minute}, {1000, true, 30 * time.Minute}, {1000, false, 30 * time.Second},
	} {
		if got := helloRetry(c.fails, c.noDoor); got != c.want {
			t.Errorf("%d failures, no door %v: ask again after %v, want %v", c.fails, c.noDoor, got, c.want)
		}
	}
}

// TestHelloAskedWhenADeltaCalls: a node that never answered hello, whose
// retry is far off, is asked at once when a request of a Delta's
// upkeep (hello, a probe, a ticket) arrives from it at the tailnet door;
// any other request, or one from a node that answered, changes nothing.
func TestHelloAskedWhenADeltaCalls(t *testing.T) {
	phone := &peer{node: "n3", online: true, helloAt: time.Now(), fails: 12, noDoor: true}
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
	if !kicked() || phone.fails != 0 || phone.noDoor || !helloDue(phone, time.Now()) {
		t.Fatalf("hello asked by the node: kicked %v, failures %d, no door %v; want a rescan with its hello due", kicked(), phone.fails, phone.noDoor)
	}
}

// TestHelloAnswered: getHello tells a hello that nothing answered (no
// listener: no Delta there) from one a door answered with a refusal.
func TestHelloAnswered(t *testing.T) {
	n := &Node{httc: &http.Client{}}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()
	door := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not one of this user's computers", http.StatusForbidden)
	}))
	defer door.Close()
	for _, c := range []struct {
		addr     string
		answered bool
	}{{nothing, false}, {strings.TrimPrefix(door.URL, "http://"), true}} {
		_, answered, err := n.getHello(context.Background(), &peer{tsAddr: c.addr})
		if err == nil || answered != c.answered {
			t.Errorf("hello from %s: answered %v, err %v; want answered %v and an error", c.addr, answered, err, c.answered)
		}
	}
}
