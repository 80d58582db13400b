package journal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/state/journal/contslot"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestContinuity: a journal that was emptied, lost its last commits (its
// WAL) or is another one than the file beside it names cannot vouch for
// the past: a call created before the break is answered expired (the
// caller settles needs_person), never never_arrived. An intact journal
// reopened vouches as before.
func TestContinuity(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	path := filepath.Join(dir, "delta.db")
	db, err := Open(path, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Continuity(ctx); c.Broken != "" || !c.Since.Equal(clk.now()) {
		t.Fatalf("a fresh journal: %+v", c)
	}
	clk.add(time.Hour)
	callAt := clk.now()
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "r1", Digest: "d"})
	db.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: "r2", Digest: "d"}) // only in the WAL
	// A copy of delta.db alone (what a sync or a backup gives), taken now.
	lost := filepath.Join(t.TempDir(), "delta.db")
	copyFile(t, path, lost)
	copyFile(t, ContinuityFile(path), ContinuityFile(lost))
	db.Close()

	clk.add(time.Hour)
	// Intact: reopened, it vouches as before.
	db, err = Open(path, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Continuity(ctx); c.Broken != "" {
		t.Fatalf("an intact journal reopened: %+v", c)
	}
	if r, _ := db.Receipts().Lookup(ctx, "n1", "never", callAt, nil); r.State != proto.ReceiptNeverArrived {
		t.Fatalf("an intact journal on an unseen id: %s", r.State)
	}
	db.Close()

	for _, tc := range []struct {
		name  string
		setup func() string // returns the journal's path
		why   string
	}{
		{"emptied", func() string {
			p := filepath.Join(t.TempDir(), "delta.db")
			copyFile(t, ContinuityFile(path), ContinuityFile(p)) // the journal gone, its file kept
			return p
		}, "new or was emptied"},
		{"the WAL lost", func() string { return lost }, "commits lost"},
		{"another journal", func() string {
			p := filepath.Join(t.TempDir(), "delta.db")
			other, err := Open(p, Options{Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			other.Close()
			copyFile(t, ContinuityFile(path), ContinuityFile(p))
			return p
		}, "another one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.setup()
			db, err := Open(p, Options{Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			c, _ := db.Continuity(ctx)
			if !strings.Contains(c.Broken, tc.why) || !c.Since.Equal(clk.now()) {
				t.Fatalf("continuity: %+v, want broken (%s) since now", c, tc.why)
			}
			// Asked about r2 (received before the break, perhaps lost
			// with it) and about an id it never saw: expired, never
			// never_arrived.
			for _, id := range []string{"r2", "unseen"} {
				r, err := db.Receipts().Lookup(ctx, "n1", id, callAt, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r.State == proto.ReceiptNeverArrived {
					t.Fatalf("%s: a journal that cannot vouch said never_arrived", id)
				}
			}
			// A call made after the break (and the skew) is vouched for.
			if r, _ := db.Receipts().Lookup(ctx, "n1", "later", clk.now().Add(ClockSkew+time.Minute), nil); r.State != proto.ReceiptNeverArrived {
				t.Fatalf("a call after the break: %s", r.State)
			}
		})
	}
}

// TestContinuitySlots: the file's two slots are written in turn in place;
// a torn write spoils one and the other still holds the count before it; a
// file of earlier versions (one JSON object) is read; a file with no slot
// that holds is refused at Open with the reason.
func TestContinuitySlots(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "delta.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := db.Receipts().Receive(ctx, &Receipt{Caller: "n1", RequestID: fmt.Sprint("r", i), Digest: "d"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	b, err := os.ReadFile(ContinuityFile(path))
	if err != nil || len(b) != 2*contslot.Size {
		t.Fatalf("the continuity file: %d bytes, %v", len(b), err)
	}
	f, err := contslot.Decode(b)
	if err != nil || f.Receipts != 3 {
		t.Fatalf("decoded %+v, %v; want 3 receipts", f, err)
	}
	s0, err0 := contslot.DecodeSlot(b[:contslot.Size])
	s1, err1 := contslot.DecodeSlot(b[contslot.Size:])
	if err0 != nil || err1 != nil || s0.Receipts+s1.Receipts != 5 { // 3 then 2: written in turn
		t.Fatalf("slots %+v %v, %+v %v: not written in turn", s0, err0, s1, err1)
	}

	// The newer slot torn: the other one's count, behind by one.
	torn := bytes.Clone(b)
	newer := 0
	if s1.Receipts > s0.Receipts {
		newer = contslot.Size
	}
	copy(torn[newer+20:], "\x00\x00\x00\x00")
	if f, err := contslot.Decode(torn); err != nil || f.Receipts != 2 {
		t.Fatalf("one slot torn: %+v, %v; want the other's 2", f, err)
	}
	// Both torn: no count to trust, refused by name.
	copy(torn[contslot.Size-newer+20:], "\x00\x00\x00\x00")
	if _, err := contslot.Decode(torn); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("both slots torn: %v", err)
	}
	os.WriteFile(ContinuityFile(path), torn, 0o600)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "is not Delta's continuity file (slot 1") {
		t.Fatalf("Open with both slots torn: %v", err)
	}

	// An earlier version's file: one JSON object, read, then rewritten as slots.
	os.WriteFile(ContinuityFile(path), []byte(`{"incarnation":"`+f.Incarnation+`","receipts":3}`), 0o600)
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Continuity(ctx); c.Broken != "" || c.FileError != "" {
		t.Fatalf("opened with an earlier version's file: %+v", c)
	}
	db.Close()
	if b, _ := os.ReadFile(ContinuityFile(path)); len(b) != 2*contslot.Size {
		t.Fatalf("not rewritten as slots: %q", b)
	}
}
