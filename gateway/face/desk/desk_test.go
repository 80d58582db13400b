package desk

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// fakeReconciler notes what the desk asks of it.
type fakeReconciler struct {
	mu     sync.Mutex
	asked  []string
	wakes  int
	settle func(id string) // what an answer from the owner would do
}

func (r *fakeReconciler) Ask(_ context.Context, c *record.Call, manual bool) {
	r.mu.Lock()
	r.asked = append(r.asked, c.RequestID)
	r.mu.Unlock()
	if r.settle != nil {
		r.settle(c.RequestID)
	}
}

func (r *fakeReconciler) Wake() { r.mu.Lock(); r.wakes++; r.mu.Unlock() }

// oneRouter knows one peer, studio, with no roads.
type oneRouter struct{}

func (oneRouter) Known(p string) bool { return p == "studio" }
func (oneRouter) Choose(context.Context, string, roads.Road, ...roads.Road) (roads.Candidate, error) {
	return roads.Candidate{}, roads.ErrNoRoad
}
func (oneRouter) Report(roads.Candidate, time.Duration, error) {}
func (oneRouter) Invalidate(string, roads.Road, error)         {}
func (oneRouter) Peers() []localapi.PeerStatus                 { return []localapi.PeerStatus{{Name: "studio"}} }

type noCache struct{}

func (noCache) Len() (int, int64) { return 0, 0 }

// newDesk is a desk over a real journal in a temporary folder, with a
// call r-unknown whose outcome is unknown and a call r-answered answered.
func newDesk(t *testing.T) (*Desk, *fakeReconciler, *journal.DB) {
	t.Helper()
	db, err := journal.Open(filepath.Join(t.TempDir(), "delta.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for id, to := range map[string]record.CallState{"r-unknown": record.Unknown, "r-answered": record.Answered} {
		if _, err := db.Calls().Begin(ctx, &record.Call{RequestID: id, Peer: "studio", App: "notes", Method: "POST", Path: "/n", Digest: "d-" + id}); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := db.Calls().Move(ctx, id, journal.Transition{From: []record.CallState{record.Sending}, To: to}); !ok || err != nil {
			t.Fatalf("%s to %s: %v %v", id, to, ok, err)
		}
	}
	rec := &fakeReconciler{}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	d := New(Config{DB: db, Router: oneRouter{}, Reconciler: rec, Transfers: transfer.New(time.Now), Cache: noCache{}, Counters: NewCounters(),
		Self: func() localapi.Self { return localapi.Self{Name: "laptop"} }, Notices: func() []string { return nil },
		Forwards: func() []localapi.Forward { return nil }, Version: "test", Done: done, Now: time.Now, Log: slog.New(slog.DiscardHandler)})
	return d, rec, db
}

// TestAskSettleDismiss: a person's actions reach the reconciler and the
// journal only for a call whose outcome is unsettled; a settled call's
// refusal says why in the call's own words, and is ErrNotUnsettled.
func TestAskSettleDismiss(t *testing.T) {
	d, rec, _ := newDesk(t)
	ctx := context.Background()
	if c, err := d.Ask(ctx, "r-unknown"); err != nil || c.State != record.Unknown {
		t.Fatalf("ask: %v %v", c, err)
	}
	if _, err := d.Ask(ctx, "r-answered"); !errors.Is(err, ErrNotUnsettled) {
		t.Errorf("ask a settled call: %v", err)
	}
	if _, err := d.Ask(ctx, "r-none"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ask an unknown id: %v", err)
	}
	if len(rec.asked) != 1 || rec.asked[0] != "r-unknown" {
		t.Errorf("the reconciler was asked about %v", rec.asked)
	}

	if c, err := d.Dismiss(ctx, "r-unknown", "the local API"); err != nil || !c.Dismissed || c.DismissedBy != "the local API" {
		t.Fatalf("dismiss: %+v %v", c, err)
	}
	_, err := d.Dismiss(ctx, "r-answered", "the status page")
	if !errors.Is(err, ErrNotUnsettled) || !strings.Contains(err.Error(), "only a call whose outcome is unknown") {
		t.Errorf("dismiss an answered call: %v", err)
	}

	c, err := d.Settle(ctx, "r-unknown", record.CarriedOut, "saw it on studio")
	if err != nil || c.State != record.CarriedOut {
		t.Fatalf("settle: %+v %v", c, err)
	}
	if rec.wakes != 1 {
		t.Errorf("the reconciler was woken %d times to tell the owner", rec.wakes)
	}
	if _, err := d.Settle(ctx, "r-answered", record.NotCarriedOut, ""); !errors.Is(err, journal.ErrNotSettleable) {
		t.Errorf("settle an answered call: %v", err)
	}
}

// TestSnapshotAndStatus: what the menu, the page and /v1/status show is
// the journal's: an unsettled call listed (a dismissed one apart), the
// count the counters kept.
func TestSnapshotAndStatus(t *testing.T) {
	d, _, _ := newDesk(t)
	ctx := context.Background()
	s, err := d.Snapshot(ctx)
	if err != nil || len(s.Unsettled) != 1 || s.Unsettled[0].RequestID != "r-unknown" || s.Self.Name != "laptop" || len(s.Peers) != 1 {
		t.Fatalf("snapshot: %+v %v", s, err)
	}
	d.cfg.Counters.Call(localapi.Unknown)
	st, err := d.Status(ctx)
	if err != nil || st.Unsettled != 1 || st.Counters.Calls[string(localapi.Unknown)] != 1 {
		t.Errorf("status: unsettled %d, calls %v, %v", st.Unsettled, st.Counters.Calls, err)
	}
	d.Dismiss(ctx, "r-unknown", "the status page")
	if s, _ = d.Snapshot(ctx); len(s.Unsettled) != 0 || len(s.Dismissed) != 1 {
		t.Errorf("after dismiss: %d unsettled, %d dismissed", len(s.Unsettled), len(s.Dismissed))
	}
	if st, _ = d.Status(ctx); st.Unsettled != 0 {
		t.Errorf("status counts a call set aside as unsettled: %d", st.Unsettled)
	}
}
