// Package desk is what a person and the local API see of a running Delta
// and may do with it: what the menu and the status page show (Snapshot,
// Changed), /v1/status (Status), and the actions on calls and receipts
// (Ask, Settle, Dismiss, CheckReceipt), each over the journal, the road
// keeper and the reconciler it is given. It keeps the counters of reads,
// calls and road events (Counters). The gateway wires one and serves it:
// the menu, the page and the local API are its three faces.
package desk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// Config is what a Desk works with. Every field is required.
type Config struct {
	DB     *journal.DB
	Router roads.Router
	// Reconciler asks owners about calls whose outcome is unknown.
	Reconciler Reconciler
	Transfers  *transfer.Set
	Cache      interface{ Len() (n int, bytes int64) }
	Counters   *Counters
	// Tailnet, if not nil, is the tailnet this Delta is attached to.
	Tailnet TailnetReporter
	// Self names this computer; Notices are what the gateway said a
	// person should know; Forwards lists the forwards open.
	Self     func() localapi.Self
	Notices  func() []string
	Forwards func() []localapi.Forward
	Version  string
	// Done closes when the gateway is closing.
	Done <-chan struct{}
	Now  func() time.Time
	Log  *slog.Logger
}

// Reconciler is what the desk asks of the reconciler
// (reconcile.Reconciler): to ask an owner about a call now, and to wake.
type Reconciler interface {
	Ask(ctx context.Context, c *record.Call, manual bool)
	Wake()
}

// TailnetReporter is what the gateway shows of its tailnet (tailnet.Node).
type TailnetReporter interface {
	// Status is "tailnet" in /v1/status: login state, why peers are
	// missing.
	Status() localapi.TailnetStatus
	// Summary is what the menu and the status page show of it.
	Summary() view.TailnetSummary
}

// Desk is the running Delta as a person and the local API see it.
type Desk struct {
	cfg    Config
	db     *journal.DB
	router roads.Router
	recon  interface {
		Ask(context.Context, *record.Call, bool)
		Wake()
	}
	transfers *transfer.Set
	now       func() time.Time
	log       *slog.Logger
}

// New returns the desk over cfg.
func New(cfg Config) *Desk {
	return &Desk{cfg: cfg, db: cfg.DB, router: cfg.Router, recon: cfg.Reconciler, transfers: cfg.Transfers, now: cfg.Now, log: cfg.Log}
}

// History returns call id's events, oldest first (for the status page).
func (g *Desk) History(ctx context.Context, id string) ([]record.Event, error) {
	return g.db.History(ctx, id)
}

// recentCalls is how many calls a snapshot lists in Recent and Settled.
var recentCalls = 20

// unsettledShown is how many unsettled calls a snapshot lists, newest
// first.
var unsettledShown = 500

// receiptsShown is how many received calls a snapshot lists, those to
// check first.
var receiptsShown = 200

// CapLists caps what a snapshot lists (unsettled calls, calls settled
// recently, receipts), for a test that shows the caps with few calls, and
// returns how to put them back.
func CapLists(unsettled, settled, receipts int) (restore func()) {
	u, s, r := unsettledShown, recentCalls, receiptsShown
	unsettledShown, recentCalls, receiptsShown = unsettled, settled, receipts
	return func() { unsettledShown, recentCalls, receiptsShown = u, s, r }
}

// SettledShown is how long a call settled after an unknown outcome is
// listed as settled recently.
const SettledShown = 24 * time.Hour

// Snapshot reads what the menu and the status page show.
func (g *Desk) Snapshot(ctx context.Context) (view.Snapshot, error) {
	s := view.Snapshot{Self: g.cfg.Self(), Version: g.cfg.Version, Peers: g.router.Peers()}
	if nr, ok := g.router.(roads.NearbyReporter); ok {
		s.Nearby = nr.Nearby()
	}
	if pr, ok := g.router.(roads.Pairer); ok {
		s.PairRequests = pr.PairRequests()
	}
	if g.cfg.Tailnet != nil {
		sum := g.cfg.Tailnet.Summary()
		s.Tailnet = &sum
	}
	all, err := g.db.Calls().List(ctx, journal.CallFilter{Unsettled: true, WithDismissed: true, Limit: unsettledShown + 1})
	if err != nil {
		return s, err
	}
	if len(all) > unsettledShown {
		all, s.UnsettledMore = all[:unsettledShown], true
	}
	for _, c := range all {
		if c.Dismissed {
			s.Dismissed = append(s.Dismissed, c)
		} else {
			s.Unsettled = append(s.Unsettled, c)
		}
	}
	if err := g.db.Calls().WithRequests(ctx, all); err != nil {
		return s, err
	}
	if s.Recent, err = g.db.Calls().List(ctx, journal.CallFilter{Limit: recentCalls}); err != nil {
		return s, err
	}
	if s.Settled, err = g.db.Calls().List(ctx, journal.CallFilter{SettledSince: g.now().Add(-SettledShown), Limit: recentCalls + 1}); err != nil {
		return s, err
	}
	if len(s.Settled) > recentCalls { // one more read than shown: the page's count says "or more"
		s.Settled, s.SettledMore = s.Settled[:recentCalls], true
	}
	if err := g.withNames(ctx, all, s.Recent, s.Settled); err != nil {
		return s, err
	}
	recs, err := g.db.Receipts().Recent(ctx, g.now().Add(-journal.ReceiptShown), "", receiptsShown+1)
	if err != nil {
		return s, err
	}
	if len(recs) > receiptsShown {
		recs, s.ReceivedMore = recs[:receiptsShown], true
	}
	// What the calls carried, for the receipts a person looks at: to
	// check, or checked or settled (a few; the rest show their state).
	var looked []*journal.Receipt
	for _, r := range recs {
		if r.ToCheck() || !r.CheckedAt.IsZero() || r.CallerSettled != "" {
			looked = append(looked, r)
		}
	}
	if err := g.db.Receipts().WithRequests(ctx, looked); err != nil {
		return s, err
	}
	for _, r := range recs {
		s.Received = append(s.Received, receivedView(r))
	}
	if c, err := g.db.Continuity(ctx); err == nil && c.Broken != "" {
		s.JournalWarning = "This computer's journal cannot vouch for the calls it received or sent before " + c.Since.Local().Format("Mon 2 Jan 15:04") +
			" (" + c.Broken + "): callers asking about calls it received are told a person must check, and calls it sent may be missing from its list " +
			"(an app that sends one again is answered by the owner, which keeps it; it is not carried out twice)."
	}
	s.Notices = g.cfg.Notices()
	s.Transfers = g.transfers.Long()
	s.Forwards = g.cfg.Forwards()
	b := g.db.Behind()
	s.JournalBehind, s.JournalDiskFull = behindWords(b), b.DiskFull
	apps, err := g.db.Apps().List(ctx)
	for _, a := range apps {
		s.Apps = append(s.Apps, view.App{Name: a.Name, URL: a.URL})
	}
	return s, err
}

// withNames gives the calls in lists that name no app (no X-Delta-App)
// their kept request, so that the page can name the app by its
// User-Agent (view.AppName): from loaded where it was read already, else
// read once per call, whichever lists it is in. The rest are not read.
func (g *Desk) withNames(ctx context.Context, loaded []*record.Call, lists ...[]*record.Call) error {
	kept := make(map[string]*record.Request, len(loaded))
	for _, c := range loaded {
		kept[c.RequestID] = c.Request
	}
	var read []*record.Call
	for _, list := range lists {
		for _, c := range list {
			if _, ok := kept[c.RequestID]; !ok && c.CallerApp == "" {
				kept[c.RequestID] = nil
				read = append(read, c)
			}
		}
	}
	if err := g.db.Calls().WithRequests(ctx, read); err != nil {
		return err
	}
	for _, c := range read {
		kept[c.RequestID] = c.Request
	}
	for _, list := range lists {
		for _, c := range list {
			if c.CallerApp == "" {
				c.Request = kept[c.RequestID]
			}
		}
	}
	return nil
}

func receivedView(r *journal.Receipt) view.Received {
	return view.Received{CallerName: r.CallerName, Caller: r.Caller, CallerApp: r.CallerApp, RequestID: r.RequestID, App: r.App, Method: r.Method,
		Path: r.Path, State: r.State, ReceivedAt: r.ReceivedAt, UpdatedAt: r.UpdatedAt, Digest: r.Digest, ToCheck: r.ToCheck(),
		Request: r.Request, CheckedBy: r.CheckedBy, CheckedAt: r.CheckedAt, CheckNote: r.CheckNote,
		CallerSettled: r.CallerSettled, CallerSettledAt: r.CallerSettledAt, CallerSettledNote: r.CallerSettleNote}
}

// Changed returns a channel that closes at the next change to what Snapshot
// shows: a call, a road's state, the tailnet's login state. An up road's
// new round trip alone does not count (roads.StateWatchable): the menu
// shows it at its next redraw, within a minute, rather than waking at
// every probe. Take a new one after each wake-up; a burst of changes
// wakes once.
func (g *Desk) Changed() <-chan struct{} {
	var rc <-chan struct{} // never, unless the router tells
	if w, ok := g.router.(roads.StateWatchable); ok {
		rc = w.StateChanged()
	}
	out := make(chan struct{})
	dbc, tc := g.db.Changed(), g.transfers.Changed()
	go func() {
		select {
		case <-dbc:
		case <-rc:
		case <-tc:
		case <-g.cfg.Done:
		}
		close(out)
	}()
	return out
}

// Done closes when the gateway is closing.
func (g *Desk) Done() <-chan struct{} { return g.cfg.Done }

// ErrNotUnsettled is returned by Ask for a call that is settled already.
var ErrNotUnsettled = errors.New("not unknown or needs_person")

// Ask asks the owner about an unsettled call now (the menu's "Ask now",
// POST /v1/calls/{id}/ask) and returns the call as it stands after. A call
// that needs a person may be settled by it. Errors wrap journal.ErrNotFound
// or ErrNotUnsettled.
func (g *Desk) Ask(ctx context.Context, id string) (*record.Call, error) {
	c, err := g.db.Calls().Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !c.State.Unsettled() {
		return c, fmt.Errorf("call %s is %s, %w; there is nothing to ask", id, c.State, ErrNotUnsettled)
	}
	g.recon.Ask(ctx, c, true)
	return g.db.Calls().Get(ctx, id)
}

// Settle records a person's settlement of an unknown or needs_person call:
// to is carried_out or not_carried_out. The reconciler no longer asks
// about it; an owner's later answer that says otherwise is an alarm.
func (g *Desk) Settle(ctx context.Context, id string, to record.CallState, note string) (*record.Call, error) {
	c, err := g.db.Calls().SettleByPerson(ctx, id, to, note)
	if err == nil {
		g.log.Info("call settled by a person", "request_id", id, "peer", c.Peer, "state", to, "note", note)
		g.recon.Wake() // the owner is told, so that it stops listing it as one to check
	}
	return c, err
}

// ErrAmbiguous refuses an action on a request id that two callers used,
// without saying whose.
var ErrAmbiguous = errors.New("more than one computer sent a call under this id")

// CheckReceipt records that a person here checked the receipt of call id
// (from caller, a computer's name or node ID, when two used the id): by
// names where ("the status page", "the local API"). Errors wrap
// journal.ErrNotFound, journal.ErrNotCheckable or ErrAmbiguous.
func (g *Desk) CheckReceipt(ctx context.Context, id, caller, by, note string) (view.Received, error) {
	rc, err := g.CheckReceiptRecord(ctx, id, caller, by, note)
	if rc == nil {
		return view.Received{}, err
	}
	return receivedView(rc), err
}

// CheckReceiptRecord is CheckReceipt, returning the journal's receipt (the
// local API shows it whole).
func (g *Desk) CheckReceiptRecord(ctx context.Context, id, caller, by, note string) (*journal.Receipt, error) {
	recs, err := g.db.Receipts().Find(ctx, id)
	if err != nil {
		return nil, err
	}
	var names []string
	var match []*journal.Receipt
	for _, rc := range recs {
		names = append(names, rc.CallerName)
		if caller == "" || caller == rc.CallerName || caller == rc.Caller {
			match = append(match, rc)
		}
	}
	switch {
	case len(match) == 0 && caller != "" && len(recs) > 0:
		return nil, fmt.Errorf("this computer received call %s from %s, not from %s: %w", id, strings.Join(names, " and "), caller, journal.ErrNotFound)
	case len(match) == 0:
		return nil, fmt.Errorf("this computer received no call %s: %w", id, journal.ErrNotFound)
	case len(match) > 1:
		return nil, fmt.Errorf("%w (%s): name the caller", ErrAmbiguous, strings.Join(names, ", "))
	}
	rc, err := g.db.Receipts().Check(ctx, match[0].Caller, id, by, note)
	if err == nil {
		g.log.Info("a received call was checked by a person", "request_id", id, "caller", rc.CallerName, "app", rc.App, "by", by, "note", note)
	}
	return rc, err
}

// Dismiss sets a call aside: hidden from the menu, still reconciled. by
// names who asked ("the status page", "the local API"), as recorded.
func (g *Desk) Dismiss(ctx context.Context, id, by string) (*record.Call, error) {
	moved, err := g.db.Calls().Dismiss(ctx, id, by)
	if err != nil {
		return nil, err
	}
	c, err := g.db.Calls().Get(ctx, id)
	if err != nil || moved {
		return c, err
	}
	if c.State == record.NeedsPerson {
		return c, &conflictError{fmt.Sprintf("call %s needs a person, so it cannot be set aside: setting aside means \"keep asking\", and Delta asks about it no more; check with %s whether it happened and settle it (delta settle %s)", id, c.Peer, id)}
	}
	return c, &conflictError{fmt.Sprintf("call %s is %s: only a call whose outcome is unknown can be set aside", id, view.Words(c.State))}
}

// conflictError refuses an action on a call in the wrong state, in its
// own words; it is an ErrNotUnsettled (409 conflict).
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }
func (e *conflictError) Unwrap() error { return ErrNotUnsettled }

// behindWords says what the menu and the page say of outcomes the journal
// holds in memory, or "".
func behindWords(b journal.Behind) string {
	if b.Held == 0 {
		return ""
	}
	what := "The journal cannot write"
	if b.DiskFull {
		what = "The disk is full"
	}
	return fmt.Sprintf("%s (%v): %d call outcome(s) since %s are held in memory, and apps are told so. Free space; Delta writes them then. If Delta stops before, those calls are reconciled with their owners.",
		what, b.Err, b.Held, b.Since.Local().Format("15:04:05"))
}
