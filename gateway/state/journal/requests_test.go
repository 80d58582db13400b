package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/wire/record"
)

func begin(t *testing.T, db *DB, id string, body []byte) *record.Call {
	t.Helper()
	c := &record.Call{RequestID: id, Peer: "studio", App: "notes", Method: "POST", Path: "/n", Digest: "d-" + id,
		Request: record.KeepRequest(http.Header{"Content-Type": {"text/plain"}, "X-Delta-record.Request-Id": {id}}, body)}
	if ex, err := db.Calls().Begin(context.Background(), c); err != nil || ex != nil {
		t.Fatalf("begin %s: %v %v", id, ex, err)
	}
	return c
}

func toUnknown(t *testing.T, db *DB, id string) {
	t.Helper()
	if ok, _, err := db.Calls().Move(context.Background(), id, Transition{From: []record.CallState{record.Sending}, To: record.Unknown}); !ok || err != nil {
		t.Fatalf("to unknown: %v %v", ok, err)
	}
}

// TestRequestKeptAndBounded: the body up to 64 KiB is kept with the
// headers; a larger one keeps its size only; settled calls' requests go 7
// days after they settle, unsettled ones stay; over the store's bound the
// oldest settled go first.
func TestRequestKeptAndBounded(t *testing.T) {
	db, clk, _ := open(t)
	ctx := context.Background()
	begin(t, db, "small", []byte("pay the rent"))
	begin(t, db, "big", bytes.Repeat([]byte("x"), record.MaxKeptBody+1))
	c, err := db.Calls().Get(ctx, "small")
	if err != nil || c.Request == nil || string(c.Request.Body) != "pay the rent" || c.Request.Headers.Get("Content-Type") != "text/plain" || c.Request.Truncated {
		t.Fatalf("small: %+v %v", c.Request, err)
	}
	c, _ = db.Calls().Get(ctx, "big")
	if c.Request == nil || !c.Request.Truncated || c.Request.Body != nil || c.Request.Size != record.MaxKeptBody+1 {
		t.Fatalf("big: %+v", c.Request)
	}
	// small settles; big stays unsettled.
	toUnknown(t, db, "small")
	toUnknown(t, db, "big")
	if ok, _, _ := db.Calls().Move(ctx, "small", Transition{From: []record.CallState{record.Unknown}, To: record.CarriedOut}); !ok {
		t.Fatal("settle small")
	}
	clk.add(RequestRetention - time.Minute)
	if _, err := db.Receipts().Sweep(ctx, clk.now()); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Calls().Get(ctx, "small"); c.Request == nil {
		t.Fatal("a request settled less than 7 days ago was dropped")
	}
	clk.add(2 * time.Minute)
	res, err := db.Receipts().Sweep(ctx, clk.now())
	if err != nil || res.RequestsGone != 1 {
		t.Fatalf("sweep after 7 days: %+v %v", res, err)
	}
	if c, _ := db.Calls().Get(ctx, "small"); c.Request != nil {
		t.Fatal("a request settled 7 days ago is still kept")
	}
	if c, _ := db.Calls().Get(ctx, "big"); c.Request == nil {
		t.Fatal("an unsettled call's request was dropped")
	}

	// The bound: five settled bodies of 1 KiB with a 3 KiB store keep the
	// three newest.
	defer func(old int64) { maxRequestStore = old }(maxRequestStore)
	maxRequestStore = 3 << 10
	for i := range 5 {
		id := fmt.Sprintf("b%d", i)
		begin(t, db, id, bytes.Repeat([]byte{'a' + byte(i)}, 1<<10))
		toUnknown(t, db, id)
		clk.add(time.Second)
		if ok, _, _ := db.Calls().Move(ctx, id, Transition{From: []record.CallState{record.Unknown}, To: record.NotCarriedOut}); !ok {
			t.Fatal("settle", id)
		}
	}
	if res, err := db.Receipts().Sweep(ctx, clk.now()); err != nil || res.RequestsGone != 2 {
		t.Fatalf("sweep over the bound: %+v %v", res, err)
	}
	for i := range 5 {
		c, _ := db.Calls().Get(ctx, fmt.Sprintf("b%d", i))
		if kept := c.Request != nil; kept != (i >= 2) {
			t.Errorf("b%d kept %v, want the three newest kept", i, kept)
		}
	}
	if c, _ := db.Calls().Get(ctx, "big"); c.Request == nil {
		t.Fatal("the bound dropped an unsettled call's request")
	}
	if n, err := db.Calls().RequestBytes(ctx); err != nil || n != 3<<10 {
		t.Fatalf("request bytes %d %v", n, err)
	}
}

// TestSettleByPerson: a person settles from unknown or needs_person only,
// as a compare-and-set that a racing reconciler can win; the history says
// a person did it, with the note.
func TestSettleByPerson(t *testing.T) {
	db, _, _ := open(t)
	ctx := context.Background()
	begin(t, db, "p1", []byte("x"))
	if _, err := db.Calls().SettleByPerson(ctx, "p1", record.CarriedOut, ""); !errors.Is(err, ErrNotSettleable) {
		t.Fatalf("settling a call being sent: %v", err)
	}
	toUnknown(t, db, "p1")
	if _, err := db.Calls().SettleByPerson(ctx, "p1", record.Answered, ""); err == nil {
		t.Fatal("a person settled a call as answered")
	}
	c, err := db.Calls().SettleByPerson(ctx, "p1", record.NotCarriedOut, "not in the notes app")
	if err != nil || c.State != record.NotCarriedOut || c.SettledBy != "a person" || c.SettleNote != "not in the notes app" || !c.NextAskAt.IsZero() {
		t.Fatalf("settled: %+v %v", c, err)
	}
	h, _ := db.History(ctx, "p1")
	if last := h[len(h)-1]; last.State != record.NotCarriedOut || !strings.Contains(last.Detail, "a person settled it: it did not happen (not in the notes app)") {
		t.Fatalf("history: %+v", last)
	}
	if _, err := db.Calls().SettleByPerson(ctx, "p1", record.CarriedOut, ""); !errors.Is(err, ErrNotSettleable) {
		t.Fatalf("settling twice: %v", err)
	}
	// needs_person, and a reconciler racing the person: exactly one wins.
	for i := range 20 {
		id := fmt.Sprintf("race%d", i)
		begin(t, db, id, nil)
		toUnknown(t, db, id)
		var wg sync.WaitGroup
		var personErr error
		var reconMoved bool
		wg.Go(func() { _, personErr = db.Calls().SettleByPerson(ctx, id, record.CarriedOut, "seen") })
		wg.Go(func() {
			reconMoved, _, _ = db.Calls().Move(ctx, id, Transition{From: []record.CallState{record.Unknown}, To: record.NotCarriedOut, Detail: "studio never received it"})
		})
		wg.Wait()
		if (personErr == nil) == reconMoved {
			t.Fatalf("%s: the person (%v) and the reconciler (moved %v) both won or both lost", id, personErr, reconMoved)
		}
		c, _ := db.Calls().Get(ctx, id)
		if personErr == nil && (c.State != record.CarriedOut || c.SettledBy == "") || reconMoved && (c.State != record.NotCarriedOut || c.SettledBy != "") {
			t.Fatalf("%s: %+v", id, c)
		}
	}
}
