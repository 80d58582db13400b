package journal

import (
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/wire/record"
)

// Every path that changes a call leaves a step in its history: the send, a
// restart's recovery, the owner's word, a dismissal, settling. Repeating what
// the owner already said adds nothing.
func TestEventsFollowEveryChange(t *testing.T) {
	db, clk, _ := open(t)
	start, err := db.LastEventSeq(ctx)
	if err != nil || start != 0 {
		t.Fatalf("LastEventSeq on an empty journal: %d %v", start, err)
	}
	db.Calls().Begin(ctx, &record.Call{RequestID: "a", Peer: "studio", App: "n", Method: "POST", Path: "/", Digest: "a"})
	db.Calls().Recover(ctx)
	clk.add(time.Second)
	db.Calls().NoteAsk(ctx, "a", "running", "the owner's app is still working on it", clk.now().Add(time.Second))
	db.Calls().NoteAsk(ctx, "a", "running", "the owner's app is still working on it", clk.now().Add(2*time.Second))
	db.Calls().Dismiss(ctx, "a", "the local API")
	db.Calls().Move(ctx, "a", Transition{From: []record.CallState{record.Unknown}, To: record.CarriedOut, OwnerState: "answered", Detail: "the owner carried it out"})

	h, err := db.History(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		from, state record.CallState
		owner       string
		dismissed   bool
	}
	want := []step{
		{"", record.Sending, "", false},
		{record.Sending, record.Unknown, "", false},
		{record.Unknown, record.Unknown, "running", false},
		{record.Unknown, record.Unknown, "running", true},
		{record.Unknown, record.CarriedOut, "answered", true},
	}
	if len(h) != len(want) {
		t.Fatalf("history has %d steps, want %d: %+v", len(h), len(want), h)
	}
	for i, w := range want {
		got := step{h[i].From, h[i].State, h[i].OwnerState, h[i].Dismissed}
		if got != w {
			t.Errorf("step %d: %+v, want %+v", i, got, w)
		}
	}
	if h[4].Detail != "the owner carried it out" || !h[2].At.Equal(clk.now()) {
		t.Errorf("a step lost its detail or time: %+v", h)
	}

	// A reader following from a cursor sees each step once, in order.
	db.Calls().Begin(ctx, &record.Call{RequestID: "b", Peer: "studio", App: "n", Method: "POST", Path: "/", Digest: "b"})
	after := h[2].Seq
	got, err := db.EventsAfter(ctx, after, 10)
	if err != nil || len(got) != 3 || got[0].Seq != h[3].Seq || got[2].RequestID != "b" {
		t.Fatalf("EventsAfter(%d): %+v %v", after, got, err)
	}
	if last, _ := db.LastEventSeq(ctx); last != got[2].Seq {
		t.Errorf("LastEventSeq %d, want %d", last, got[2].Seq)
	}
}
