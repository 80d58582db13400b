package peerclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// door is a peer's door for pings: 204 to GET /delta/v1/ping with the
// ticket it takes, 401 otherwise. It counts the connections it accepted
// and those still open.
type door struct {
	srv        *httptest.Server
	conns      atomic.Int64 // accepted
	open       atomic.Int64 // accepted and not yet closed
	ticket     atomic.Pointer[string]
	swallowOne atomic.Bool // take the next ping and never answer it
}

func startDoor(t *testing.T) *door {
	t.Helper()
	d := &door{}
	tk := "t1"
	d.ticket.Store(&tk)
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != proto.PathPing {
			http.NotFound(w, r)
			return
		}
		if d.swallowOne.CompareAndSwap(true, false) {
			<-r.Context().Done() // until the asker closes the connection
			return
		}
		if r.Header.Get("Authorization") != proto.TicketAuth(*d.ticket.Load()) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"detail":"a stale ticket"}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	d.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			d.conns.Add(1)
			d.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			d.open.Add(-1)
		}
	}
	d.srv.Start()
	t.Cleanup(d.srv.Close)
	return d
}

// tickets hands out the door's ticket, and the one it gave before until
// asked to renew it.
type tickets struct {
	mu      sync.Mutex
	current string
	renewed int
	door    *door
}

func (tk *tickets) Ticket(_ context.Context, _ string, renew bool) (string, error) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if renew {
		tk.renewed++
	}
	if renew || tk.current == "" {
		tk.current = *tk.door.ticket.Load()
	}
	return tk.current, nil
}

func (tk *tickets) renewals() int {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return tk.renewed
}

// startKept starts a door and returns it, a lan road to it whose dials
// are counted, and its tickets.
func startKept(t *testing.T) (*door, roads.Candidate, *atomic.Int64, *tickets) {
	d := startDoor(t)
	addr := d.srv.Listener.Addr().String()
	dials := new(atomic.Int64)
	cand := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: addr, Interface: "lan0", NeedsTicket: true,
		Dial: func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}}
	return d, cand, dials, &tickets{door: d}
}

// TestKeptPings: a road keeper's probes of a lan road go on one kept
// connection while it answers. When the door closes it, when it takes a
// ping and does not answer, or when it refuses the ticket, the probe
// still gets its answer (on a new connection, then kept, or with the
// ticket renewed once); a dead road's verdict is a new connection's, in
// Probe's words.
func TestKeptPings(t *testing.T) {
	ctx := context.Background()
	d, cand, dials, tk := startKept(t)
	k := NewKeptPings()
	defer k.Close()
	probe := func(what string) {
		t.Helper()
		if err := k.Probe(ctx, cand, tk, cand.Dial); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	for range 5 {
		probe("five probes")
	}
	if n, c := dials.Load(), d.conns.Load(); n != 1 || c != 1 {
		t.Errorf("5 probes: %d dials, %d connections at the door; want 1 and 1 (kept)", n, c)
	}

	// The door closes its idle connections (as its keep-alive running
	// out would): the next probe is answered on a new connection, which
	// is kept in turn.
	d.srv.CloseClientConnections()
	for range 3 {
		probe("after the door closed the kept connection")
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("after the door closed the kept connection: %d dials in all, want 2", n)
	}

	// A new ticket at the door: the old one is refused (401) on the kept
	// connection, renewed once, and the probe answered there.
	nt := "t2"
	d.ticket.Store(&nt)
	probe("with a stale ticket")
	if r, n := tk.renewals(), dials.Load(); r != 1 || n != 2 {
		t.Errorf("stale ticket: renewed %d times, %d dials; want 1 and still 2", r, n)
	}

	// The kept connection takes the ping and never answers: after
	// keptWait the probe asks on a new connection, which answers.
	d.swallowOne.Store(true)
	start := time.Now()
	probe("with the kept connection silent")
	if took, n := time.Since(start), dials.Load(); n != 3 || took < keptWait {
		t.Errorf("kept connection silent: %d dials in all after %v; want 3, after at least %v", n, took, keptWait)
	}
	probe("on the connection kept after the silent one")
	if n := dials.Load(); n != 3 {
		t.Errorf("the new connection was not kept: %d dials in all, want 3", n)
	}

	// A dead road: the door is gone, its connections with it. The
	// verdict is a new connection's, word for word Probe's.
	d.srv.Close()
	err := k.Probe(ctx, cand, tk, cand.Dial)
	want := Probe(ctx, cand, tk, cand.Dial)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("dead road: %v; Probe says %v", err, want)
	}
}

// TestKeptPingsOnlyWhereKept: the tailnet road's probes, and every probe
// after Close, go on a connection of their own, closed at once: the door
// sees every connection it took end.
func TestKeptPingsOnlyWhereKept(t *testing.T) {
	ctx := context.Background()
	d, lan, dials, tk := startKept(t)
	tail := lan
	tail.Road, tail.Interface = roads.Tailnet, ""
	k := NewKeptPings()
	probe := func(c roads.Candidate) {
		t.Helper()
		if err := k.Probe(ctx, c, tk, c.Dial); err != nil {
			t.Fatalf("probe %s: %v", c, err)
		}
	}
	for range 3 {
		probe(tail)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("3 tailnet probes: %d dials, want 3", n)
	}
	probe(lan)
	probe(lan)
	if n := dials.Load(); n != 4 {
		t.Errorf("two lan probes: %d dials in all, want 4 (one kept)", n)
	}
	k.Close()
	probe(lan)
	probe(lan)
	if n := dials.Load(); n != 6 {
		t.Errorf("two lan probes after Close: %d dials in all, want 6", n)
	}
	waitFor(t, "the door to see every connection closed", func() bool { return d.open.Load() == 0 })
}

// TestKeptPingsTimeout: a road whose door takes the connection and never
// answers is a timeout on a new connection, as it is for Probe, so that
// the router holds it down (routes.Book.Report: h1.IsTimeout).
func TestKeptPingsTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held sync.WaitGroup
		defer held.Wait()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held.Go(func() { io.Copy(io.Discard, c); c.Close() }) // reads, never answers
		}
	}()
	defer func() { l.Close(); <-done }()
	addr := l.Addr().String()
	cand := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: addr, Interface: "lan0",
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}}
	k := NewKeptPings()
	defer k.Close()
	for name, probe := range map[string]func(context.Context) error{
		"Probe":           func(ctx context.Context) error { return Probe(ctx, cand, nil, cand.Dial) },
		"KeptPings.Probe": func(ctx context.Context) error { return k.Probe(ctx, cand, nil, cand.Dial) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		err := probe(ctx)
		cancel()
		if err == nil || !h1.IsTimeout(err) {
			t.Errorf("%s of a door that never answers: %v; want a timeout", name, err)
		}
	}
}
