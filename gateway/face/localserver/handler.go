package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/caller"
	"github.com/delta-roads/delta/gateway/face/desk"
	"github.com/delta-roads/delta/gateway/face/forward"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// Backend is what the local API asks of the running Delta beyond its
// journal: its status, the actions a person may take on calls and
// receipts (the desk's, shared with the menu and the status page), a
// ping, and a link to the page. *gateway.Gateway is one.
type Backend interface {
	Status(ctx context.Context) (localapi.Status, error)
	Ask(ctx context.Context, id string) (*record.Call, error)
	Dismiss(ctx context.Context, id, by string) (*record.Call, error)
	Settle(ctx context.Context, id string, to record.CallState, note string) (*record.Call, error)
	CheckReceiptRecord(ctx context.Context, id, caller, by, note string) (*journal.Receipt, error)
	Ping(ctx context.Context, peer string) ([]localapi.PingRoad, error)
	LoginLink() string
}

// Config is what the local API works with. Every field is required.
type Config struct {
	Backend Backend
	// DB is the journal: calls, receipts and apps are read and written
	// there.
	DB *journal.DB
	// Caller carries an app's requests to its peers; Router knows them.
	Caller *caller.Caller
	Router roads.Router
	// PeerApps asks a peer the names of its apps (peerclient's AppList).
	PeerApps func(ctx context.Context, peer string) ([]string, error)
	// Counters count what the local API refuses before carrying it.
	Counters *desk.Counters
	// Page is the status page, served on its own login under its paths.
	Page http.Handler
	// Token is the local token; StateDir names where it is kept.
	Token    string
	StateDir string
	// OwnDoors are the addresses of this Delta's local API and peer
	// listeners: an app registered on one of them would loop back.
	OwnDoors func() []net.Addr
	Log      *slog.Logger
	Now      func() time.Time
}

// Handler is the local API.
type Handler struct {
	cfg      Config
	forwards *forward.Set
	h        http.Handler
}

// New returns the local API over cfg. Its forwards are set with
// SetForwards before it serves (they are made with its ServeForward and
// CheckAuth).
func New(cfg Config) *Handler {
	g := &Handler{cfg: cfg}
	g.h = g.routes()
	return g
}

// SetForwards gives the local API the forwards it lists, opens and closes.
func (g *Handler) SetForwards(fs *forward.Set) { g.forwards = fs }

// ServeHTTP serves the local API.
func (g *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.h.ServeHTTP(w, r) }

func (g *Handler) handlePing(w http.ResponseWriter, r *http.Request) {
	peer := r.PathValue("peer")
	if err := proto.CheckName("peer", peer); err != nil {
		localError(w, localapi.BadRequest, err.Error())
		return
	}
	res, err := g.cfg.Backend.Ping(r.Context(), peer)
	if errors.Is(err, roads.ErrUnknownPeer) {
		localError(w, localapi.NotFound, err.Error())
		return
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"peer": peer, "roads": res})
}

func (g *Handler) handleStatus(w http.ResponseWriter, r *http.Request) {
	s, err := g.cfg.Backend.Status(r.Context())
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	proto.WriteJSON(w, http.StatusOK, s)
}

func (g *Handler) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s, err := g.cfg.Backend.Status(r.Context())
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
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
	if rc, ok := g.cfg.Router.(roads.Counted); ok {
		c := rc.RouteCounters()
		writeFamily(w, "delta_route_invalidations_total", "Roads dropped, by cause.", "cause", c.Invalidations)
		writeFamily(w, "delta_route_drops_total", "Roads dropped, by the evidence that dropped them (connect, netwatch, probe, closed, keepalive).", "evidence", c.Drops)
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
