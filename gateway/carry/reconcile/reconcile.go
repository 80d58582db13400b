// Package reconcile settles calls whose outcome is unknown by asking their
// owners what they know (DESIGN §4): with backoff, at once when a road to
// the peer comes up, and when a person asks. Settling is a compare-and-set
// in the journal; a later answer that contradicts a settled call is an
// alarm, never applied.
package reconcile

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// neverNotCarriedOutAfter: a call this old is never settled
// not_carried_out, because the owner may have swept its receipt (DESIGN §4).
const neverNotCarriedOutAfter = 89 * 24 * time.Hour

// askTimeout bounds one question to the owner.
const askTimeout = 20 * time.Second

// Config configures a Reconciler.
type Config struct {
	// Calls is the caller's journal, its calls' face: the reconciler
	// reads and moves calls, nothing else. Required.
	Calls journal.Calls
	// Peers reaches the owners. Required.
	Peers *peerclient.Client
	// Ctx ends when Delta stops: Run returns, and what an ask learned is
	// still written until then. Required.
	Ctx context.Context
	// Backoff is the schedule of asks; after it, every last value.
	// Required.
	Backoff []time.Duration
	// Now is the clock. Required.
	Now func() time.Time
	// Log receives settlements and alarms. Required.
	Log *slog.Logger
	// OnAsk, OnSettled and OnAlarm, if not nil, count asks, settlements
	// by state and alarms.
	OnAsk     func()
	OnSettled func(record.CallState)
	OnAlarm   func()
}

// Reconciler settles unknown calls by asking their owners (DESIGN §4).
type Reconciler struct {
	cfg    Config
	wakeCh chan struct{}

	mu     sync.Mutex
	kicked map[string]bool // peers whose unknown calls are asked about now

	tellFailed map[string]time.Time // peers last not reached with a settlement (Run's own)
}

// New returns a reconciler; Run runs it.
func New(cfg Config) *Reconciler {
	if cfg.OnAsk == nil {
		cfg.OnAsk = func() {}
	}
	if cfg.OnSettled == nil {
		cfg.OnSettled = func(record.CallState) {}
	}
	if cfg.OnAlarm == nil {
		cfg.OnAlarm = func() {}
	}
	return &Reconciler{cfg: cfg, wakeCh: make(chan struct{}, 1), kicked: map[string]bool{}, tellFailed: map[string]time.Time{}}
}

// Wake makes the reconciler look for due calls now (a call became
// unknown), and tell owners of settlements (a person settled a call).
func (rc *Reconciler) Wake() {
	select {
	case rc.wakeCh <- struct{}{}:
	default:
	}
}

// KickPeer asks about peer's unknown calls, and tells it of settlements,
// at once (a road to it came up).
func (rc *Reconciler) KickPeer(peer string) {
	rc.mu.Lock()
	rc.kicked[peer] = true
	rc.mu.Unlock()
	rc.Wake()
}

// Run asks about due calls, and tells owners of a person's settlements,
// until Config.Ctx ends.
func (rc *Reconciler) Run() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		rc.mu.Lock()
		kicked := rc.kicked
		rc.kicked = map[string]bool{}
		rc.mu.Unlock()
		for peer := range kicked {
			calls, err := rc.cfg.Calls.UnknownFor(rc.cfg.Ctx, peer)
			if err != nil {
				rc.cfg.Log.Error("reconciler: list calls", "peer", peer, "err", err)
			}
			for _, c := range calls {
				rc.Ask(rc.cfg.Ctx, c, false)
			}
			rc.tellSettled(peer)
		}
		rc.tellSettled("")
		due, err := rc.cfg.Calls.Due(rc.cfg.Ctx, rc.cfg.Now())
		if err != nil && rc.cfg.Ctx.Err() == nil {
			rc.cfg.Log.Error("reconciler: list due calls", "err", err)
		}
		for _, c := range due {
			if rc.cfg.Ctx.Err() != nil {
				return
			}
			rc.Ask(rc.cfg.Ctx, c, false)
		}
		wait := time.Minute
		if next, ok, _ := rc.cfg.Calls.NextAsk(rc.cfg.Ctx); ok {
			wait = min(max(next.Sub(rc.cfg.Now()), 0), time.Minute)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-rc.cfg.Ctx.Done():
			return
		case <-rc.wakeCh:
		case <-timer.C:
		}
	}
}

func (rc *Reconciler) backoff(asks int) time.Duration {
	b := rc.cfg.Backoff
	return b[min(asks, len(b)-1)]
}

// Ask asks the owner about call c once and settles it if the answer
// allows. manual is true when a person asked ("Ask now"): then a call that
// needs a person may be settled too.
func (rc *Reconciler) Ask(ctx context.Context, c *record.Call, manual bool) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	rc.cfg.OnAsk()
	next := rc.cfg.Now().Add(rc.backoff(c.Asks + 1))
	st, err := rc.query(ctx, c)
	if err != nil {
		if rc.cfg.Ctx.Err() != nil {
			return
		}
		detail := fmt.Sprintf("could not ask %s about this call (%v); asking again at %s", c.Peer, err, next.Format(time.TimeOnly))
		if err := rc.cfg.Calls.NoteAsk(rc.cfg.Ctx, c.RequestID, c.OwnerState, detail, next); err != nil {
			rc.cfg.Log.Error("reconciler: record ask", "request_id", c.RequestID, "err", err)
		}
		return
	}
	v := Settle(c.Peer, c.Digest, rc.cfg.Now().Sub(c.CreatedAt), st)
	if v.To == "" {
		detail := fmt.Sprintf("%s; asking again at %s", v.Detail, next.Format(time.TimeOnly))
		if err := rc.cfg.Calls.NoteAsk(rc.cfg.Ctx, c.RequestID, string(st.State), detail, next); err != nil {
			rc.cfg.Log.Error("reconciler: record ask", "request_id", c.RequestID, "err", err)
		}
		return
	}
	from := []record.CallState{record.Unknown}
	if manual {
		from = append(from, record.NeedsPerson)
	}
	t := journal.Transition{From: from, To: v.To, Detail: v.Detail, Answer: v.Answer, OwnerState: string(st.State), CountAsk: true}
	moved, cur, err := rc.cfg.Calls.Move(rc.cfg.Ctx, c.RequestID, t)
	if err != nil {
		rc.cfg.Log.Error("reconciler: settle", "request_id", c.RequestID, "err", err)
		return
	}
	if moved {
		rc.cfg.OnSettled(t.To)
		rc.cfg.Log.Info("call settled", "request_id", c.RequestID, "peer", c.Peer, "state", t.To, "detail", t.Detail)
		return
	}
	if cur != nil && cur.State != t.To && cur.State != record.Unknown {
		rc.cfg.OnAlarm()
		rc.cfg.Log.Error("ALARM: a settled call's owner now says otherwise; the later answer is not applied",
			"request_id", c.RequestID, "peer", c.Peer, "settled", cur.State, "owner_says", st.State, "would_be", t.To)
	}
}

// Verdict is what an owner's word makes of an unknown call: To is the
// state to settle it in, with its Detail and the owner's Answer; To empty
// means ask again later (Detail says why).
type Verdict struct {
	To     record.CallState
	Detail string
	Answer *record.Answer
}

// Settle is the reconciler's rules (DESIGN §4), one pure function: what
// the owner peer said (st) of a call of digest, made age ago, settles it
// as. A digest of "" is a call whose body streamed and whose digest its
// owner never said here (the owner sums a streamed body, and says its
// digest in its reply: no reply came, or the upload was cut): the id was
// sent from this computer once, so the owner's receipt under it is this
// call's, whatever digest it holds.
func Settle(peer, digest string, age time.Duration, st *proto.CallStateJSON) Verdict {
	sameCall := st.Digest == digest || digest == ""
	switch {
	case st.State == proto.ReceiptAnswered && sameCall:
		v := Verdict{To: record.CarriedOut, Detail: fmt.Sprintf("%s carried it out (it received the call at %s and its app answered)", peer, st.ReceivedAt)}
		if a := st.Answer; a != nil {
			body, _ := base64.StdEncoding.DecodeString(a.BodyBase64) // the owner writes valid base64
			v.Answer = &record.Answer{Status: a.Status, Headers: a.Headers, Body: body, Omitted: a.Omitted}
		} else {
			v.Detail += "; the answer itself is no longer kept"
		}
		return v
	case st.State == proto.ReceiptNeverArrived || st.State == proto.ReceiptNotCarriedOut || !sameCall && st.Digest != "":
		v := Verdict{To: record.NotCarriedOut}
		switch {
		case st.State == proto.ReceiptNeverArrived:
			v.Detail = fmt.Sprintf("%s never received it, and has fenced the request id so it never will: it was not carried out", peer)
		case !sameCall:
			v.Detail = fmt.Sprintf("%s holds another request under this id (digest %.12s…), so this one was not carried out", peer, st.Digest)
		default:
			v.Detail = fmt.Sprintf("%s received it but did not carry it out (its app was not listening, or the call's body did not arrive whole)", peer)
		}
		if age > neverNotCarriedOutAfter {
			v.To = record.NeedsPerson
			v.Detail = fmt.Sprintf("%s says %s, but the call is %d days old and the owner may have forgotten it; a person must check", peer, st.State, int(age.Hours()/24))
		}
		return v
	case st.State == proto.ReceiptRunning:
		return Verdict{Detail: fmt.Sprintf("%s is still carrying it out", peer)}
	case st.State == proto.ReceiptInterrupted:
		return Verdict{To: record.NeedsPerson, Detail: fmt.Sprintf("%s restarted while its app was working on it; nobody knows whether the app acted: a person must check", peer)}
	case st.State == proto.ReceiptAppUnknown:
		return Verdict{To: record.NeedsPerson, Detail: fmt.Sprintf("%s's app took the call and its connection broke before it answered; it may or may not have acted: a person must check", peer)}
	case st.State == proto.ReceiptExpired:
		return Verdict{To: record.NeedsPerson, Detail: fmt.Sprintf("%s has no record that can vouch for this call (its journal keeps 90 days, and it began, or lost part of itself, after this call was made): a person must check", peer)}
	}
	return Verdict{Detail: fmt.Sprintf("%s answered with a state Delta does not know (%q)", peer, st.State)}
}

// query asks the owner what it knows of call c, on any road, never from a
// cache.
func (rc *Reconciler) query(ctx context.Context, c *record.Call) (*proto.CallStateJSON, error) {
	return rc.cfg.Peers.Lookup(ctx, c.Peer, c.RequestID, c.Digest, c.CreatedAt)
}
