package peerclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/routes"
)

// TestJudge: what a failed exchange proves of its road (DESIGN §2c, the
// table in docs/protocol.md): only a road's own failures drop it; a close
// in the middle of an answer, or a deadline of this side's own, has it
// probed; a client that went away proves nothing.
func TestJudge(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	keepalive := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
	cut := &CutError{Road: roads.LAN, Why: &roads.DropError{Evidence: roads.EvidenceProbe, Err: errors.New("refused")}, Err: net.ErrClosed}
	early := fmt.Errorf("%w: %v", h1.ErrClosedEarly, io.EOF)
	ownDeadline := fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	for _, tc := range []struct {
		name  string
		phase Phase
		gone  bool
		err   error
		want  Judgment
	}{
		{"the client went away, whatever the error", BeforeHead, true, reset, Judgment{GaveUp: true}},
		{"the client went away mid-answer", InBody, true, ownDeadline, Judgment{GaveUp: true}},
		{"closed here for a road dropped already", InBody, false, cut, Judgment{Cut: true}},
		{"closed here, before the head", BeforeHead, false, cut, Judgment{Cut: true}},
		{"keepalive found it dead, before the head", BeforeHead, false, keepalive, Judgment{Evidence: roads.EvidenceKeepalive}},
		{"keepalive found it dead, mid-answer", InBody, false, keepalive, Judgment{Evidence: roads.EvidenceKeepalive}},
		{"reset before the head", BeforeHead, false, reset, Judgment{Evidence: roads.EvidenceClosed}},
		{"closed before the head (h1)", BeforeHead, false, early, Judgment{Evidence: roads.EvidenceClosed}},
		{"closed before the head (a call's)", BeforeHead, false, &h1.Error{Op: "read the answer", Sent: true, Err: io.ErrUnexpectedEOF}, Judgment{Evidence: roads.EvidenceClosed}},
		{"reset mid-answer: the app may have broken off", InBody, false, reset, Judgment{Suspect: true}},
		{"cut short mid-answer", InBody, false, io.ErrUnexpectedEOF, Judgment{Suspect: true}},
		{"this side's own deadline", BeforeHead, false, ownDeadline, Judgment{Suspect: true}},
	} {
		if got := Judge(tc.phase, tc.gone, tc.err); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// recRouter is a route book's router that records what it is told to
// drop and to suspect.
type recRouter struct {
	*routes.Router
	mu          sync.Mutex
	invalidated []error
	suspected   []roads.Road
}

func (r *recRouter) Invalidate(peer string, road roads.Road, reason error) {
	r.mu.Lock()
	r.invalidated = append(r.invalidated, reason)
	r.mu.Unlock()
	r.Router.Invalidate(peer, road, reason)
}

func (r *recRouter) Suspect(peer string, road roads.Road, why string) {
	r.mu.Lock()
	r.suspected = append(r.suspected, road)
	r.mu.Unlock()
}

func newRec(cands ...roads.Candidate) *recRouter {
	book := routes.New(nil, nil)
	book.Set("studio", cands)
	return &recRouter{Router: routes.NewRouter(book, nil, nil)}
}

// TestDoActsOnEvidence: Do drops the roads an attempt's evidence names
// (a call's too, though it is never tried again), has a suspect road
// probed, and does nothing to the road of an exchange whose asker gave
// up.
func TestDoActsOnEvidence(t *testing.T) {
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "192.168.1.20:7422"}
	for _, tc := range []struct {
		name            string
		kind            Kind
		res             Result
		drops, suspects int
	}{
		{"a read closed before its head", Read, ExchangeFailed(lan, lan, nil, Judge(BeforeHead, false, io.EOF), io.EOF), 1, 0},
		{"a call whose keepalive failed", Call, LeftUnanswered(lan, Judge(BeforeHead, false, syscall.ETIMEDOUT), syscall.ETIMEDOUT), 1, 0},
		{"a call whose app went away", Call, LeftUnanswered(lan, Judge(BeforeHead, true, io.EOF), io.EOF), 0, 0},
		{"a read whose app went away", Read, GaveUp(lan), 0, 0},
		{"a read past this side's deadline", Read, ExchangeFailed(lan, lan, nil, Judge(BeforeHead, false, os.ErrDeadlineExceeded), os.ErrDeadlineExceeded), 0, 1},
		{"a question's failure (the reconciler's)", Question, ExchangeFailed(lan, lan, nil, Judge(BeforeHead, false, io.EOF), io.EOF), 0, 0},
	} {
		r := newRec(lan)
		c := New(Config{Router: r})
		tries := 0
		c.Do(context.Background(), tc.kind, "studio", roads.LAN, func(Try) Result {
			tries++
			if tries > 1 {
				return Replied()
			}
			return tc.res
		})
		if len(r.invalidated) != tc.drops || len(r.suspected) != tc.suspects {
			t.Errorf("%s: dropped %v, suspected %v; want %d drops and %d suspicions", tc.name, r.invalidated, r.suspected, tc.drops, tc.suspects)
		}
		for _, why := range r.invalidated {
			if ev := roads.EvidenceOf(why); ev != tc.res.Evidence {
				t.Errorf("%s: dropped for %s (%v), want %s", tc.name, ev, why, tc.res.Evidence)
			}
		}
	}
}

// TestDropRoadCutsItsConnections: DropRoad closes every connection to the
// peer on that road, busy ones too, and each fails with a *CutError that
// names why; a connection on another road goes on.
func TestDropRoadCutsItsConnections(t *testing.T) {
	pipe := func(road roads.Road) roads.Candidate {
		return roads.Candidate{Peer: "studio", Road: road, Address: string(road), Dial: func(context.Context) (net.Conn, error) {
			a, b := net.Pipe()
			t.Cleanup(func() { b.Close() })
			return a, nil
		}}
	}
	lan, ts := pipe(roads.LAN), pipe(roads.Tailnet)
	c := New(Config{Router: newRec(lan, ts)})
	lc, err := c.Dial(context.Background(), lan)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := c.Dial(context.Background(), ts)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	read := make(chan error, 1)
	go func() { _, err := lc.Read(make([]byte, 1)); read <- err }()
	why := &roads.DropError{Evidence: roads.EvidenceKeepalive, Err: syscall.ETIMEDOUT}
	if n := c.DropRoad("studio", roads.LAN, why); n != 1 {
		t.Fatalf("DropRoad closed %d connections, want the lan one", n)
	}
	err = <-read
	var ce *CutError
	if !errors.As(err, &ce) || ce.Road != roads.LAN || roads.EvidenceOf(err) != roads.EvidenceKeepalive {
		t.Errorf("a busy read on the dropped road: %v, want a *CutError naming keepalive", err)
	}
	tc.SetDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := tc.Read(make([]byte, 1)); errors.As(err, &ce) {
		t.Errorf("the tailnet connection was cut too: %v", err)
	}
}

// TestLookQuiet: a connection that an exchange uses and that carried
// nothing for QuietCheck has its road probed, once each QuietCheck while it
// stays quiet; an idle pooled one, or one whose bytes move, never does.
func TestLookQuiet(t *testing.T) {
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "lan", Dial: func(context.Context) (net.Conn, error) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, nil
	}}
	r := newRec(lan)
	c := New(Config{Router: r})
	busy, err := c.Dial(context.Background(), lan)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := c.Dial(context.Background(), lan)
	if err != nil {
		t.Fatal(err)
	}
	idle.SetBusy(false) // the pool has it back
	t0 := time.Unix(0, busy.moved.Load())
	idle.moved.Store(t0.Add(-time.Hour).UnixNano())
	asked := map[quietRoad]time.Time{}
	if next := c.lookQuiet(t0.Add(QuietCheck/2), r, asked); len(r.suspected) != 0 || next != QuietCheck/2 {
		t.Fatalf("half quiet: suspected %v, next look in %v; want none, and a look when it has been quiet for QuietCheck", r.suspected, next)
	}
	c.lookQuiet(t0.Add(QuietCheck), r, asked)
	c.lookQuiet(t0.Add(QuietCheck+QuietCheck/2), r, asked)
	if len(r.suspected) != 1 || r.suspected[0] != roads.LAN {
		t.Fatalf("quiet for QuietCheck and a half: suspected %v, want lan once", r.suspected)
	}
	c.lookQuiet(t0.Add(2*QuietCheck), r, asked)
	if len(r.suspected) != 2 {
		t.Fatalf("quiet for twice QuietCheck: suspected %v, want lan again", r.suspected)
	}
	busy.moved.Store(t0.Add(2 * QuietCheck).UnixNano()) // bytes moved
	c.lookQuiet(t0.Add(2*QuietCheck+time.Second), r, asked)
	busy.Close()
	idle.Close()
	if next := c.lookQuiet(t0.Add(4*QuietCheck), r, asked); len(r.suspected) != 2 || next != 0 {
		t.Errorf("after bytes moved, and then with no connection busy: suspected %v, next look %v; want no more, and none", r.suspected, next)
	}
}

// TestLostRaceGoesBehind: when a worse road wins a race while a better
// one is still connecting, the next exchanges choose the winner first, so
// they do not pay the stagger again while the silent road's connect runs
// (issue 62, item 7); once the loser has connected, it is first again.
func TestLostRaceGoesBehind(t *testing.T) {
	release := make(chan struct{})
	tb := roads.Candidate{Peer: "studio", Road: roads.Thunderbolt, Address: "tb", Dial: func(ctx context.Context) (net.Conn, error) {
		<-release // silent until released
		a, b := net.Pipe()
		b.Close()
		return a, nil
	}}
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "lan", Dial: func(context.Context) (net.Conn, error) {
		a, b := net.Pipe()
		t.Cleanup(func() { b.Close() })
		return a, nil
	}}
	book := routes.New(nil, nil)
	book.Set("studio", []roads.Candidate{tb, lan})
	router := routes.NewRouter(book, nil, nil)
	c := New(Config{Router: router})
	first, err := router.Choose(context.Background(), "studio", "")
	if err != nil || first.Road != roads.Thunderbolt {
		t.Fatalf("first choice: %v %v, want thunderbolt", first, err)
	}
	rc, err := c.Dial(context.Background(), first)
	if err != nil || rc.Cand.Road != roads.LAN || len(rc.Outrun) != 1 {
		t.Fatalf("the race: %+v %v, want lan, having outrun thunderbolt", rc, err)
	}
	rc.Close()
	next, err := router.Choose(context.Background(), "studio", "")
	if err != nil || next.Road != roads.LAN || len(next.Next) != 1 || next.Next[0].Road != roads.Thunderbolt {
		t.Fatalf("the next choice while thunderbolt still connects: %v %v, want lan first, thunderbolt after it", next, err)
	}
	changed := book.Changed()
	close(release) // thunderbolt connects late: it proves itself
	for {
		if again, _ := router.Choose(context.Background(), "studio", ""); again.Road == roads.Thunderbolt {
			break
		}
		<-changed
		changed = book.Changed()
	}
}

// TestWatchQuietSleepsAndWakes: the quiet watch sleeps while no
// connection is busy, is woken by one becoming busy (and only then: it
// costs nothing on the path of an exchange while it watches already), and
// returns when its context ends.
func TestWatchQuietSleepsAndWakes(t *testing.T) {
	lan := roads.Candidate{Peer: "studio", Road: roads.LAN, Address: "lan", Dial: func(context.Context) (net.Conn, error) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, nil
	}}
	c := New(Config{Router: newRec(lan)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.WatchQuiet(ctx); close(done) }()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitUntil("the watch to sleep with nothing busy", c.quietIdle.Load)
	rc, err := c.Dial(context.Background(), lan)
	if err != nil {
		t.Fatal(err)
	}
	if c.quietIdle.Load() {
		t.Fatal("a connection became busy and the watch was not woken")
	}
	rc.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WatchQuiet did not return when its context ended")
	}
}
