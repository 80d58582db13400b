package journal

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// Outcomes the journal could not write (a full disk, an I/O error) are
// held here, in memory, and written when it takes writes again (Flush).
// Until then every read of their call or receipt shows them, marked
// Behind, so the app that was told an outcome and every repeat of its
// request are told the same thing. A crash meanwhile loses only what is
// held: the call stays "sending" (unknown at the next start, then asked
// about) and the receipt "running" (interrupted), which is what they were
// before, never a false "nothing was sent".
type behind struct {
	mu       sync.Mutex
	calls    map[string]heldMove
	receipts map[[2]string]heldReceipt // caller node, request id
	lastErr  error
	since    time.Time     // when the oldest held outcome was held
	waiting  chan struct{} // Holding's, closed when an outcome is held
}

type heldMove struct {
	t  Transition
	at time.Time
}

type heldReceipt struct {
	state proto.ReceiptState
	ans   *record.Answer
	at    time.Time
}

// Behind says what the journal holds in memory because it could not write
// it: how many outcomes, since when, the last write error, and whether the
// disk (or the database's size limit) is full.
type Behind struct {
	Held     int
	Since    time.Time
	Err      error
	DiskFull bool
}

// Behind reports the outcomes held in memory; Held is 0 when the journal
// has written everything.
func (d *DB) Behind() Behind {
	b := &d.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.calls) + len(b.receipts)
	if n == 0 {
		return Behind{}
	}
	return Behind{Held: n, Since: b.since, Err: b.lastErr, DiskFull: IsDiskFull(b.lastErr)}
}

// Holding returns a channel closed once the journal holds an outcome in
// memory (at once if it does), for Flush's caller to wait on.
func (d *DB) Holding() <-chan struct{} {
	b := &d.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting == nil {
		b.waiting = make(chan struct{})
	}
	c := b.waiting
	if len(b.calls)+len(b.receipts) > 0 {
		close(c)
		b.waiting = nil
	}
	return c
}

// holdable reports whether a failed write is held rather than reported:
// not when the caller gave up (ctx) or the record is missing.
func holdable(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotFound)
}

func (b *behind) noteLocked(err error, now time.Time) {
	if b.waiting != nil { // the caller holds an outcome under this lock: Holding's waiters see it
		close(b.waiting)
		b.waiting = nil
	}
	if len(b.calls)+len(b.receipts) == 0 {
		b.since = now
	}
	b.lastErr = err
}

// MoveOrHold is Move for an outcome the app is about to be told: if the
// journal cannot write it, it is held in memory (held is true, err nil)
// and written by a later Flush.
func (d Calls) MoveOrHold(ctx context.Context, id string, t Transition) (moved, held bool, err error) {
	moved, _, err = d.Move(ctx, id, t)
	if !holdable(ctx, err) {
		return moved, false, err
	}
	b := &d.behind
	b.mu.Lock()
	b.noteLocked(err, d.now())
	if b.calls == nil {
		b.calls = map[string]heldMove{}
	}
	b.calls[id] = heldMove{t: t, at: d.now()}
	b.mu.Unlock()
	d.notify()
	return true, true, nil
}

// FinishOrHold is FinishReceipt for an outcome the caller is about
// to be told: if the journal cannot write it, it is held in memory (held
// is true, err nil) and written by a later Flush.
func (d Receipts) FinishOrHold(ctx context.Context, caller, id string, state proto.ReceiptState, ans *record.Answer) (running, held bool, err error) {
	running, err = d.finishReceipt(ctx, caller, id, state, ans)
	if !holdable(ctx, err) {
		return running, false, err
	}
	b := &d.behind
	b.mu.Lock()
	b.noteLocked(err, d.now())
	if b.receipts == nil {
		b.receipts = map[[2]string]heldReceipt{}
	}
	b.receipts[[2]string{caller, id}] = heldReceipt{state: state, ans: ans, at: d.now()}
	b.mu.Unlock()
	d.notify()
	return true, true, nil
}

// Flush writes the held outcomes, oldest first, and stops at the first
// that still cannot be written. It returns how many are still held.
func (d *DB) Flush(ctx context.Context) (int, error) {
	b := &d.behind
	b.mu.Lock()
	type item struct {
		at   time.Time
		call string
		rec  [2]string
	}
	var items []item
	for id, h := range b.calls {
		items = append(items, item{at: h.at, call: id})
	}
	for k, h := range b.receipts {
		items = append(items, item{at: h.at, rec: k})
	}
	b.mu.Unlock()
	slices.SortFunc(items, func(a, b item) int { return a.at.Compare(b.at) })
	for _, it := range items {
		var err error
		b.mu.Lock()
		hm, okc := b.calls[it.call]
		hr, okr := b.receipts[it.rec]
		b.mu.Unlock()
		switch {
		case it.call != "" && okc:
			_, _, err = d.Calls().Move(ctx, it.call, hm.t) // not moved: it moved meanwhile, and the newer state stands
		case it.call == "" && okr:
			_, err = d.finishReceipt(ctx, it.rec[0], it.rec[1], hr.state, hr.ans)
		default:
			continue
		}
		b.mu.Lock()
		if err != nil && !errors.Is(err, ErrNotFound) {
			b.lastErr = err
			n := len(b.calls) + len(b.receipts)
			b.mu.Unlock()
			return n, err
		}
		if it.call != "" {
			delete(b.calls, it.call)
		} else {
			delete(b.receipts, it.rec)
		}
		b.mu.Unlock()
	}
	d.notify()
	return d.Behind().Held, nil
}

// overlayCall shows a held outcome in a call read from the journal.
func (d *store) overlayCall(c *record.Call) {
	b := &d.behind
	b.mu.Lock()
	h, ok := b.calls[c.RequestID]
	b.mu.Unlock()
	if !ok || !slices.Contains(h.t.From, c.State) {
		return
	}
	t := h.t
	c.State, c.Behind = t.To, true
	if t.Outcome != "" {
		c.Outcome = t.Outcome
	}
	if t.Detail != "" {
		c.Detail = t.Detail
	}
	if t.OwnerState != "" {
		c.OwnerState = t.OwnerState
	}
	if t.Answer != nil {
		c.Answer = t.Answer
	}
	c.NextAskAt = t.NextAsk
	for _, a := range t.Attempts {
		if i := slices.IndexFunc(c.Attempts, func(x record.Attempt) bool { return x.N == a.N }); i >= 0 {
			c.Attempts[i] = a
		} else {
			c.Attempts = append(c.Attempts, a)
		}
	}
}

// overlayReceipt shows a held outcome in a receipt read from the journal.
func (d *store) overlayReceipt(r *Receipt) {
	if r == nil || r.State != proto.ReceiptRunning {
		return
	}
	b := &d.behind
	b.mu.Lock()
	h, ok := b.receipts[[2]string{r.Caller, r.RequestID}]
	b.mu.Unlock()
	if !ok {
		return
	}
	r.State, r.Behind = h.state, true
	if h.ans != nil {
		r.Answer = h.ans
	}
}
