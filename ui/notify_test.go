package ui

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/record"
)

type recorder struct {
	mu    sync.Mutex
	notes []Note
	wake  chan struct{}
}

func (r *recorder) Send(n Note) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
	close(r.wake)
	r.wake = make(chan struct{})
	return nil
}

// wait returns the notes once there are n of them.
func (r *recorder) wait(t *testing.T, n int) []Note {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		got, wake := append([]Note(nil), r.notes...), r.wake
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("%d notifications, want %d: %+v", len(got), n, got)
		}
	}
}

// A burst of writes becoming unsettled is one notification that counts
// them; each settling is told by how it settled; a call that was unknown
// before the notifier started is not told again; what the owner says while
// a call stays unknown is not news.
func TestNotifierCoalesces(t *testing.T) {
	db, err := journal.Open(filepath.Join(t.TempDir(), "delta.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	begin := func(id string) {
		db.Calls().Begin(ctx, &record.Call{RequestID: id, Peer: "studio", App: "notes", CallerApp: "editor", Method: "POST", Path: "/n/" + id, Digest: id})
	}
	move := func(id string, from, to record.CallState) {
		if moved, _, err := db.Calls().Move(ctx, id, journal.Transition{From: []record.CallState{from}, To: to}); !moved || err != nil {
			t.Fatalf("move %s to %s: %v %v", id, to, moved, err)
		}
	}
	begin("old")
	move("old", record.Sending, record.Unknown)

	rec := &recorder{wake: make(chan struct{})}
	n := &Notifier{Events: journalEvents{db}, Sender: rec, Log: slog.New(slog.DiscardHandler), Window: time.Second}
	cursor, err := db.LastEventSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { n.RunFrom(ctx, cursor) })
	defer func() { cancel(); wg.Wait() }()
	db.Calls().NoteAsk(ctx, "old", "running", "still running", time.Now().Add(time.Hour))

	for i := range 5 {
		id := fmt.Sprintf("b%d", i)
		begin(id)
		move(id, record.Sending, record.Unknown)
	}
	got := rec.wait(t, 1)
	if len(got) != 1 || got[0].Title != "5 writes' outcomes are unknown" || !strings.Contains(got[0].Body, "and 2 more") {
		t.Fatalf("burst: %+v", got)
	}

	move("b0", record.Unknown, record.CarriedOut)
	got = rec.wait(t, 2)
	if got[1].Title != "Write carried out" || !strings.Contains(got[1].Body, "editor → notes on studio: POST /n/b0: studio says it was carried out") {
		t.Fatalf("carried out: %+v", got[1])
	}
	move("b1", record.Unknown, record.NeedsPerson)
	move("b2", record.Unknown, record.NotCarriedOut)
	got = rec.wait(t, 4)
	if got[2].Title != "A write needs you" || got[3].Title != "Write not carried out" {
		t.Fatalf("needs you, not carried out: %+v", got[2:])
	}
	for _, g := range got {
		if strings.Contains(g.Body, "/n/old") {
			t.Errorf("a call unknown before the notifier started was told: %+v", g)
		}
	}
}

// journalEvents is a journal as the notifier reads it: its events, and a
// call's record from its calls' face.
type journalEvents struct{ *journal.DB }

func (e journalEvents) Call(ctx context.Context, id string) (*record.Call, error) {
	return e.Calls().Get(ctx, id)
}
