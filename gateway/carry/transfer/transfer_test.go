package transfer

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// A transfer is listed once it has run for Shown, with its bytes and
// rate; the set says when that changes; sessions are counted while open.
func TestLong(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := New(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	changed := s.Changed()
	x := s.Start(localapi.TransferRead, "studio", "films", "/a.mov", "thunderbolt")
	io.Copy(io.Discard, x.Reader(strings.NewReader(strings.Repeat("x", 4000)), false))
	if got := s.Long(); len(got) != 0 {
		t.Fatalf("listed before a second: %+v", got)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	select {
	case <-changed: // the timer of Shown fired
	case <-time.After(5 * time.Second):
		t.Fatal("no change when the transfer became long")
	}
	x.SetRoad("lan")
	got := s.Long()
	if len(got) != 1 || got[0].Received != 4000 || got[0].Road != "lan" || got[0].Rate != 2000 {
		t.Fatalf("long transfers: %+v", got)
	}
	changed = s.Changed()
	x.Done()
	select {
	case <-changed:
	default:
		t.Error("no change when a long transfer ended")
	}
	if len(s.Long()) != 0 {
		t.Error("an ended transfer is still listed")
	}
	y := s.Start(localapi.TransferSession, "studio", "chat", "/ws", "lan")
	if s.Sessions() != 1 {
		t.Errorf("%d sessions open, want 1", s.Sessions())
	}
	y.Done()
	y.Done() // twice is once
	if s.Sessions() != 0 {
		t.Errorf("%d sessions open after it closed", s.Sessions())
	}
}

// TestShownPath: a transfer's query, which may hold a secret, is never
// shown (issue 34 U3).
func TestShownPath(t *testing.T) {
	s := New(nil)
	x := s.Start(localapi.TransferRead, "studio", "files", "/big.iso?token=s3cret&x=1", "lan")
	defer x.Done()
	if x.Path != "/big.iso?…" || ShownPath("/a") != "/a" {
		t.Errorf("shown: %q, %q", x.Path, ShownPath("/a"))
	}
}

// TestLongOneTimer: the set's one timer finds each transfer that runs for
// Shown, whether it started before or after another that ended sooner,
// and a transfer that ended before Shown is never said to be long.
func TestLongOneTimer(t *testing.T) {
	s := New(nil)
	wait := func(what string, changed <-chan struct{}) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * Shown):
			t.Fatalf("no change when %s", what)
		}
	}
	changed := s.Changed()
	short := s.Start(localapi.TransferRead, "studio", "films", "/short", "lan")
	long := s.Start(localapi.TransferRead, "studio", "films", "/long", "lan")
	short.Done()
	wait("the second transfer became long", changed)
	if got := s.Long(); len(got) != 1 || got[0].Path != "/long" {
		t.Fatalf("long transfers: %+v", got)
	}
	s.mu.Lock()
	if short.long || !long.long {
		t.Errorf("short long=%v, long long=%v", short.long, long.long)
	}
	s.mu.Unlock()
	changed = s.Changed()
	later := s.Start(localapi.TransferCall, "studio", "films", "/later", "lan")
	wait("a transfer started after the first tick became long", changed)
	if got := s.Long(); len(got) != 2 {
		t.Fatalf("long transfers: %+v", got)
	}
	changed = s.Changed()
	long.Done()
	later.Done()
	wait("the long transfers ended", changed)
	s.mu.Lock()
	ticking := s.ticking
	s.mu.Unlock()
	if ticking {
		t.Error("the timer is still set with no transfer running")
	}
}
