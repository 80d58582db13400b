package desk

import (
	"context"

	"sync"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/state/journal"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// Counters are the gateway's counters, for /v1/status and /metrics; its
// rooms count into them through their On* hooks.
type Counters struct {
	mu       sync.Mutex
	reads    map[localapi.Outcome]uint64
	calls    map[localapi.Outcome]uint64
	settles  map[record.CallState]uint64
	counters map[string]uint64
}

// NewCounters returns counters all at zero.
func NewCounters() *Counters {
	return &Counters{reads: map[localapi.Outcome]uint64{}, calls: map[localapi.Outcome]uint64{},
		settles: map[record.CallState]uint64{}, counters: map[string]uint64{}}
}

func (s *Counters) Read(o localapi.Outcome) { s.mu.Lock(); s.reads[o]++; s.mu.Unlock() }
func (s *Counters) Call(o localapi.Outcome) { s.mu.Lock(); s.calls[o]++; s.mu.Unlock() }
func (s *Counters) Settled(st record.CallState) {
	s.mu.Lock()
	s.settles[st]++
	s.mu.Unlock()
}
func (s *Counters) Inc(name string) { s.mu.Lock(); s.counters[name]++; s.mu.Unlock() }
func (s *Counters) Fallback()       { s.Inc("route_fallbacks") }
func (s *Counters) CacheHit()       { s.Inc("cache_hits") }
func (s *Counters) Revalidated()    { s.Inc("cache_revalidated") }
func (s *Counters) Ask()            { s.Inc("reconciler_asks") }
func (s *Counters) Alarm()          { s.Inc("reconciler_alarms") }
func (s *Counters) Replay()         { s.Inc("owner_replays") }
func (s *Counters) DoorRefusal()    { s.Inc("door_refusals") }

// cut counts an answer that broke off on its way to an app, whose
// connection was cut rather than ended as if whole: reads_cut_read,
// reads_cut_call_answer.
func (s *Counters) Cut(what string) { s.Inc("answers_cut_" + what) }

// GaveUp counts an exchange its app stopped waiting for (gave_up_read,
// gave_up_call, gave_up_session): ended, and its road kept.
func (s *Counters) GaveUp(what string) { s.Inc("gave_up_" + what) }

// connect counts a connect to a road (road_connects_lan), or a caller that
// joined one in flight instead (road_connects_joined_lan).
func (s *Counters) Connect(road roads.Road, joined bool) {
	if joined {
		s.Inc("road_connects_joined_" + string(road))
		return
	}
	s.Inc("road_connects_" + string(road))
}

func (s *Counters) Snapshot() localapi.Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := localapi.Counters{Reads: map[string]uint64{}, Calls: map[string]uint64{},
		Settled: map[string]uint64{}, Counters: map[string]uint64{"route_fallbacks": 0}}
	for k, n := range s.reads {
		v.Reads[string(k)] = n
	}
	for k, n := range s.calls {
		v.Calls[string(k)] = n
	}
	for k, n := range s.settles {
		v.Settled[string(k)] = n
	}
	for k, n := range s.counters {
		v.Counters[k] = n
	}
	return v
}

// behind is the journal's Behind for /v1/status, nil when it is not.
func behind(b journal.Behind) *localapi.Behind {
	if b.Held == 0 {
		return nil
	}
	j := &localapi.Behind{Held: b.Held, Since: b.Since.UTC(), DiskFull: b.DiskFull}
	if b.Err != nil {
		j.Error = b.Err.Error()
	}
	return j
}

// Status is what GET /v1/status says: this computer, its peers and roads,
// the counters, the journal's state, what is under way.
func (g *Desk) Status(ctx context.Context) (localapi.Status, error) {
	s := localapi.Status{Self: g.cfg.Self(), Version: g.cfg.Version, Peers: g.router.Peers(), Counters: g.cfg.Counters.Snapshot(), Notices: g.cfg.Notices(),
		Forwards: g.cfg.Forwards()}
	if nr, ok := g.router.(roads.NearbyReporter); ok {
		s.Nearby = nr.Nearby()
	}
	if pr, ok := g.router.(roads.Pairer); ok {
		s.PairRequests = pr.PairRequests()
	}
	if s.Peers == nil {
		s.Peers = []localapi.PeerStatus{}
	}
	if s.Notices == nil {
		s.Notices = []string{}
	}
	if rc, ok := g.router.(roads.Counted); ok {
		s.Routes = rc.RouteCounters()
	}
	if g.cfg.Tailnet != nil {
		t := g.cfg.Tailnet.Status()
		s.Tailnet = &t
	}
	var err error
	if s.Journal.RequestBytes, err = g.db.Calls().RequestBytes(ctx); err != nil {
		return s, err
	}
	if s.Journal.Continuity, err = g.db.Continuity(ctx); err != nil {
		return s, err
	}
	s.Journal.Behind = behind(g.db.Behind())
	s.Transfers, s.Sessions = g.transfers.Long(), g.transfers.Sessions()
	if s.Unsettled, s.NeedsYou, err = g.db.Calls().CountUnsettled(ctx); err != nil {
		return s, err
	}
	if s.ReceivedToCheck, err = g.db.Receipts().CountToCheck(ctx, g.now().Add(-journal.ReceiptShown)); err != nil {
		return s, err
	}
	s.Dismissed, err = g.db.Calls().CountDismissed(ctx)
	s.Cache.Entries, s.Cache.Bytes = g.cfg.Cache.Len()
	return s, err
}
