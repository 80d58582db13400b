package gateway

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"

	"github.com/delta-roads/delta/gateway/journal"
	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/pintls"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/record"
	"github.com/delta-roads/delta/gateway/roads"
)

// stats are the gateway's counters, for /v1/status and /metrics.
type stats struct {
	mu       sync.Mutex
	reads    map[proto.Outcome]uint64
	calls    map[proto.Outcome]uint64
	settles  map[record.CallState]uint64
	counters map[string]uint64
}

func newStats() *stats {
	return &stats{reads: map[proto.Outcome]uint64{}, calls: map[proto.Outcome]uint64{},
		settles: map[record.CallState]uint64{}, counters: map[string]uint64{}}
}

func (s *stats) read(o proto.Outcome) { s.mu.Lock(); s.reads[o]++; s.mu.Unlock() }
func (s *stats) call(o proto.Outcome) { s.mu.Lock(); s.calls[o]++; s.mu.Unlock() }
func (s *stats) settled(st record.CallState) {
	s.mu.Lock()
	s.settles[st]++
	s.mu.Unlock()
}
func (s *stats) inc(name string) { s.mu.Lock(); s.counters[name]++; s.mu.Unlock() }
func (s *stats) fallback()       { s.inc("route_fallbacks") }
func (s *stats) cacheHit()       { s.inc("cache_hits") }
func (s *stats) revalidated()    { s.inc("cache_revalidated") }
func (s *stats) ask()            { s.inc("reconciler_asks") }
func (s *stats) alarm()          { s.inc("reconciler_alarms") }
func (s *stats) replay()         { s.inc("owner_replays") }
func (s *stats) doorRefusal()    { s.inc("door_refusals") }

// cut counts an answer that broke off on its way to an app, whose
// connection was cut rather than ended as if whole: reads_cut_read,
// reads_cut_call_answer.
func (s *stats) cut(what string) { s.inc("answers_cut_" + what) }

// connect counts a connect to a road (road_connects_lan), or a caller that
// joined one in flight instead (road_connects_joined_lan).
func (s *stats) connect(road roads.Road, joined bool) {
	if joined {
		s.inc("road_connects_joined_" + string(road))
		return
	}
	s.inc("road_connects_" + string(road))
}

func (s *stats) snapshot() localapi.Counters {
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

func (g *Gateway) status(r *http.Request) (localapi.Status, error) {
	s := localapi.Status{Self: g.Self(), Version: g.cfg.Version, Peers: g.router.Peers(), Counters: g.stats.snapshot(), Notices: g.Notices(),
		Forwards: g.forwards.List()}
	if nr, ok := g.router.(roads.NearbyReporter); ok {
		s.Nearby = nr.Nearby()
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
	if s.Journal.RequestBytes, err = g.db.RequestBytes(r.Context()); err != nil {
		return s, err
	}
	if s.Journal.Continuity, err = g.db.Continuity(r.Context()); err != nil {
		return s, err
	}
	s.Journal.Behind = behind(g.db.Behind())
	s.Transfers, s.Sessions = g.transfers.Long(), g.transfers.Sessions()
	if s.Unsettled, s.NeedsYou, err = g.db.CountUnsettled(r.Context()); err != nil {
		return s, err
	}
	if s.ReceivedToCheck, err = g.db.CountToCheck(r.Context(), g.now().Add(-journal.ReceiptShown)); err != nil {
		return s, err
	}
	s.Dismissed, err = g.db.CountDismissed(r.Context())
	s.Cache.Entries, s.Cache.Bytes = g.cache.Len()
	return s, err
}

func (g *Gateway) handleStatus(w http.ResponseWriter, r *http.Request) {
	s, err := g.status(r)
	if err != nil {
		localError(w, proto.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	proto.WriteJSON(w, http.StatusOK, s)
}

func (g *Gateway) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s, err := g.status(r)
	if err != nil {
		localError(w, proto.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	writeFamily(w, "delta_reads_total", "Reads by outcome.", "outcome", s.Counters.Reads)
	writeFamily(w, "delta_calls_total", "Calls by outcome.", "outcome", s.Counters.Calls)
	writeFamily(w, "delta_calls_settled_total", "Unknown calls settled by the reconciler, by state.", "state", s.Counters.Settled)
	names := make([]string, 0, len(s.Counters.Counters))
	for k := range s.Counters.Counters {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "# TYPE delta_%s_total counter\ndelta_%s_total %d\n", k, k, s.Counters.Counters[k])
	}
	if rc, ok := g.router.(roads.Counted); ok {
		c := rc.RouteCounters()
		writeFamily(w, "delta_route_invalidations_total", "Roads dropped, by cause.", "cause", c.Invalidations)
		writeFamily(w, "delta_route_races_won_total", "Connects won in a race across roads, by road.", "road", c.RacesWon)
		if len(c.Upkeep) > 0 {
			req, bytes := map[string]uint64{}, map[string]uint64{}
			for k, v := range c.Upkeep {
				req[k], bytes[k] = v.Requests, v.Bytes
			}
			writeFamily(w, "delta_upkeep_requests_total", "Requests sent to peers only to keep the roads known (probes, hellos, tickets), by kind.", "kind", req)
			writeFamily(w, "delta_upkeep_bytes_total", "Bytes both ways on the connections of those requests, by kind.", "kind", bytes)
		}
		fmt.Fprintf(w, "# HELP delta_route_hold_down_refusals_total Callers refused at once because a road is held down.\n# TYPE delta_route_hold_down_refusals_total counter\ndelta_route_hold_down_refusals_total %d\n", c.HoldDownRefusals)
	}
	if full, resumed := pintls.Handshakes(); full+resumed > 0 {
		writeFamily(w, "delta_tls_handshakes_total", "TLS handshakes on the lan road made by this process, full or resuming a session.", "kind", map[string]uint64{"full": full, "resumed": resumed})
	}
	fmt.Fprintf(w, "# HELP delta_unsettled_calls Calls whose outcome is unknown or needs a person.\n# TYPE delta_unsettled_calls gauge\ndelta_unsettled_calls %d\n", s.Unsettled)
	fmt.Fprintf(w, "# TYPE delta_cache_bytes gauge\ndelta_cache_bytes %d\n", s.Cache.Bytes)
	fmt.Fprintf(w, "# HELP delta_sessions_open Sessions (upgrades: WebSocket) open.\n# TYPE delta_sessions_open gauge\ndelta_sessions_open %d\n", s.Sessions)
	fmt.Fprintf(w, "# HELP delta_transfers_long Transfers that have run for a second or more.\n# TYPE delta_transfers_long gauge\ndelta_transfers_long %d\n", len(s.Transfers))
	held := 0
	if s.Journal.Behind != nil {
		held = s.Journal.Behind.Held
	}
	fmt.Fprintf(w, "# HELP delta_journal_held_outcomes Outcomes held in memory because the journal could not write them.\n# TYPE delta_journal_held_outcomes gauge\ndelta_journal_held_outcomes %d\n", held)
}

func writeFamily[K ~string](w io.Writer, name, help, label string, m map[K]uint64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=%q} %d\n", name, label, k, m[K(k)])
	}
}
