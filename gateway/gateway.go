// Package gateway wires one running Delta: the local API that apps on
// this computer call (DESIGN §3) and the peer API that other computers'
// Deltas call (§4), around the rooms that do the work: caller (this
// computer's outgoing reads and calls), owner (its door and its apps'
// side), peerclient (the roads' connections), reconcile (settling unknown
// outcomes) and journal.
//
// A Gateway is configured with a Config and started with Start; Close undoes
// everything Start did. The road to a peer is chosen by a roads.Router and
// callers are identified at the peer API's door by an owner.Door, so the tailnet
// and the route book slot in without touching the call path.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/caller"
	"github.com/delta-roads/delta/gateway/carry/owner"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/carry/readcache"
	"github.com/delta-roads/delta/gateway/carry/reconcile"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/face/desk"
	"github.com/delta-roads/delta/gateway/face/forward"
	"github.com/delta-roads/delta/gateway/face/localserver"
	"github.com/delta-roads/delta/gateway/face/statuspage"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/h1server"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/direct"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// DefaultListen is the local API's address (DESIGN §3, §8).
const DefaultListen = "127.0.0.1:7420"

// doorLimits are the limits of the local API and every peer listener: 10 s
// for a request's headers, 60 s for the whole request (an 8 MiB body on a
// slow road fits), 90 s for an idle keep-alive connection.
var doorLimits = doors.Limits{Header: 10 * time.Second, Request: 60 * time.Second, Idle: 90 * time.Second}

// Connections one source may hold at once: a peer (its pooled reads at
// c=64, its one-use calls and its reconciler fit four times over), and the
// local API, where every app of this computer is one source, 127.0.0.1.
// Both stay well under a process's usual 1,024 files, so one client cannot
// fill the table and starve a peer (the adversarial run held 1,009).
const (
	peerConnsPerSource  = 256
	localConnsPerSource = 512
)

// limits are doorLimits with a cap of perSource connections per source,
// each refusal counted and summarized in the log.
func limits(perSource int, refusals *doors.RefusalLog, counters *desk.Counters) doors.Limits {
	l := doorLimits
	l.PerSource = perSource
	l.OnRefused = func(remote string) {
		counters.Inc("door_connections_refused")
		refusals.Refused(remote, fmt.Errorf("over %d connections at once from one source; answered 503 and closed", perSource))
	}
	return l
}

// localLimits are the local API's and the forwards' limits: a connection
// over the cap is told so as an app is told any refusal before anything
// left (the peer listeners' say door_busy, nothing carried out).
func (g *Gateway) localLimits() doors.Limits {
	l := limits(localConnsPerSource, g.refusals, g.stats)
	l.HTTP2 = true // apps' HTTP/2 with prior knowledge (gRPC): docs/protocol.md §1c
	l.Busy = func(w http.ResponseWriter) {
		proto.WriteError(w, http.StatusServiceUnavailable, localapi.ErrorBody{Error: string(localapi.Unavailable),
			Detail: proto.NotSent(fmt.Sprintf("this Delta holds %d connections from this computer's apps at once, and this one is over", localConnsPerSource), "")}.With(localapi.NothingSent))
	}
	return l
}

// DefaultBackoff is the reconciler's schedule (DESIGN §4): after that, every
// last value.
var DefaultBackoff = []time.Duration{1 * time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, 60 * time.Second}

// Config configures a Gateway.
type Config struct {
	// StateDir is the state folder (DESIGN §7). Required.
	StateDir string
	// StateLock, if not nil, is the state folder's lock taken already
	// with statedir.Lock; the caller releases it after Close (and after
	// anything else it runs on the folder). If nil, Start takes the lock
	// and Close releases it.
	StateLock *os.File
	// Listen is the local API's address; it must be a loopback address.
	// Port 0 takes a free port (see LocalURL). If empty, DefaultListen.
	// With ListenFallback, a port in use (another user's Delta: ports are
	// per computer) is replaced with a free one, said in the log and the
	// menu; local.json names it either way.
	Listen         string
	ListenFallback bool
	// PeerListeners serve the peer API, each behind its own door (the
	// tailnet listener with WhoIs, the TLS listener with tickets, static
	// mode's plain TCP). Start takes them over; Close closes them.
	// Required: a mode's Attach sets them.
	PeerListeners []PeerListener
	// LaterListeners, if not nil, delivers peer listeners that appear while
	// the gateway runs (a TLS listener on an address that came up); each is
	// served until its listener is closed, or Close.
	LaterListeners <-chan PeerListener
	// SelfFunc names this computer (it may change, e.g. once logged in to
	// the tailnet). Required: a mode's Attach sets it.
	SelfFunc func() localapi.Self
	// Logger receives the gateway's log. If nil, nothing is logged.
	Logger *slog.Logger
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
	// Router chooses roads to peers. Required: a mode's Attach sets it.
	Router roads.Router
	// Door identifies callers on the peer API when a listener has none of
	// its own. Required: a mode's Attach sets it.
	Door owner.Door
	// Tickets supplies the tickets this gateway presents. Required: a
	// mode's Attach sets it.
	Tickets peerclient.Tickets
	// Backoff is the reconciler's schedule. If nil, DefaultBackoff.
	Backoff []time.Duration
	// CacheBytes bounds the read cache. If 0, 64 MiB.
	CacheBytes int64
	// SweepEvery is how often the retention sweep runs. If 0, hourly.
	SweepEvery time.Duration
	// Journal, if not nil, is the journal to use, opened already on
	// <state>/delta.db (tests that also write to it); the caller closes it
	// after Close. If nil, Start opens it and Close closes it.
	Journal *journal.DB
	// Version is reported in status. If empty, "dev".
	Version string
	// OpenURL asks the desktop to open a URL in the person's browser:
	// the setup page's Open (a forward's own guard refuses a browser sent
	// there by another page, so the desktop opens it as a person's own
	// address). If nil, the page shows the URL to open instead.
	OpenURL func(url string) error
	// Tailnet, if not nil, is the tailnet this gateway is attached to: its
	// state is "tailnet" in /v1/status, and its summary is in the menu.
	Tailnet TailnetReporter
	// MaxCallBytes is the largest body a call may carry, going out and
	// coming in (config.json's max_call_bytes). If 0,
	// proto.DefaultMaxCallBytes (16 GiB).
	MaxCallBytes int64
}

// TailnetReporter is what the gateway shows of its tailnet (tailnet.Node).
type TailnetReporter = desk.TailnetReporter

// DirectReads is what a mode offers so that apps can read from a peer
// while this computer's Delta is down (direct.Reads).
type DirectReads = direct.Reads

// Gateway is one running Delta: its config, its lifecycle (Start,
// Close), the events it follows, and the wiring of its rooms. What a
// person and the local API see of it and do with it is its desk's
// (Snapshot, Status, Ask, Settle, …: desk.Desk, embedded); the local API
// is localserver's.
type Gateway struct {
	*desk.Desk
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	db     *journal.DB
	router roads.Router
	door   owner.Door
	ticket peerclient.Tickets
	cache  *readcache.Cache
	stats  *desk.Counters
	token  string

	lock      *os.File
	localLn   net.Listener
	localSrv  *h1server.Server
	peerMu    sync.Mutex
	peerSrvs  []*h1server.Server
	peerLns   []net.Listener
	doorAddrs []net.Addr // every peer listener's, for notOwnDoor
	pc        *peerclient.Client
	owner     *owner.Owner
	recon     *reconcile.Reconciler
	caller    *caller.Caller
	transfers *transfer.Set // under way: reads, calls, sessions
	forwards  *forward.Set  // loopback doors, one a peer's app
	page      *statuspage.Page
	local     *localserver.Handler
	direct    *direct.Keeper
	refusals  *doors.RefusalLog // connections over a door's cap

	noticeMu sync.Mutex
	notices  []string // said in the log, the menu and the status (AddNotice)

	ctx    context.Context // ends at Close: background work stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines

}

// PeerListener is one listener of the peer API.
type PeerListener struct {
	// Name names the listener in logs ("tailnet", "lan").
	Name string
	// Listener is taken over by Start and closed by Close.
	Listener net.Listener
	// Door identifies callers on this listener. If nil, the gateway's.
	Door owner.Door
	// Routes, if not nil, registers extra handlers on this listener's mux
	// (behind the door; see owner.VisitorFrom).
	Routes func(mux *http.ServeMux)
}

// New checks cfg and returns a gateway that is not started.
func New(cfg Config) (*Gateway, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("gateway: no state folder given (--state-dir or DELTA_STATE_DIR)")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if err := CheckListen(cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.Router == nil || cfg.Door == nil || cfg.Tickets == nil || cfg.SelfFunc == nil || len(cfg.PeerListeners) == 0 {
		return nil, errors.New("gateway: no mode attached: a Router, Door, Tickets, SelfFunc and peer listeners come from tailnet.Node.Attach or static.Attach")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = 64 << 20
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = time.Hour
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MaxCallBytes == 0 {
		cfg.MaxCallBytes = proto.DefaultMaxCallBytes
	}
	if cfg.MaxCallBytes < 0 {
		return nil, fmt.Errorf("gateway: max_call_bytes is %d; it must be a size in bytes", cfg.MaxCallBytes)
	}
	return &Gateway{cfg: cfg, log: cfg.Logger, now: cfg.Now}, nil
}

// CheckListen checks a local API address: host:port on loopback.
func CheckListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway: --listen %q is not host:port: %w", addr, err)
	}
	if !proto.IsLoopbackHost(host) {
		return fmt.Errorf("gateway: --listen %q is not a loopback address; the local API listens on loopback only", addr)
	}
	return nil
}

// Start takes the state folder's lock, opens the journal, applies the
// restart rules, and starts the listeners and the reconciler. On error,
// whatever it started is undone.
func (g *Gateway) Start() (err error) {
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	dir := g.cfg.StateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("gateway: make state folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("gateway: state folder: %w", err)
	}
	if g.lock = g.cfg.StateLock; g.lock == nil {
		if g.lock, err = statedir.Lock(dir); err != nil {
			return err
		}
	}
	if g.cfg.StateLock == nil {
		undo = append(undo, func() { g.lock.Close() })
	}
	if g.token, err = statedir.LoadOrCreateSecret(filepath.Join(dir, localapi.TokenFile)); err != nil {
		return fmt.Errorf("gateway: local token: %w", err)
	}
	g.router, g.door, g.ticket = g.cfg.Router, g.cfg.Door, g.cfg.Tickets

	if g.db = g.cfg.Journal; g.db == nil {
		if g.db, err = journal.Open(filepath.Join(dir, statedir.JournalFile), journal.Options{Now: g.now}); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		undo = append(undo, func() { g.db.Close() })
	}
	ctx := context.Background()
	if n, err := g.db.Calls().Recover(ctx); err != nil {
		return fmt.Errorf("gateway: %w", err)
	} else if n > 0 {
		g.log.Warn("calls were being sent when Delta stopped; they are now unknown and will be reconciled", "calls", n)
	}
	if c, err := g.db.Continuity(ctx); err != nil {
		return fmt.Errorf("gateway: %w", err)
	} else if c.Broken != "" {
		g.log.Error("JOURNAL CONTINUITY BROKEN: this computer's journal cannot vouch for the calls its apps received before the time given; "+
			"callers asking about them are told it no longer knows (a person must check), never that they did not arrive; "+
			"calls this computer sent before then may be missing from its list (one sent again is answered by its owner, which keeps it, not carried out twice)",
			"before", c.Since.Local().Format(time.RFC3339), "why", c.Broken)
	}
	if n, notHanded, err := g.db.Receipts().Recover(ctx); err != nil {
		return fmt.Errorf("gateway: %w", err)
	} else {
		if n > 0 {
			g.log.Warn("received calls were running when Delta stopped; they are now interrupted", "receipts", n)
		}
		if notHanded > 0 {
			g.log.Info("received calls had not reached their app when Delta stopped (a body still arriving); they were not carried out", "receipts", notHanded)
		}
	}
	if _, err := g.db.Receipts().Sweep(ctx, g.now()); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}

	spool := filepath.Join(dir, statedir.SpoolDir)
	if err := owner.CleanSpool(spool); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.cache = readcache.New(g.cfg.CacheBytes, g.now)
	g.transfers = transfer.New(g.now)
	g.stats = desk.NewCounters()
	g.refusals = doors.NewRefusalLog(g.log, g.now)
	g.pc = peerclient.New(peerclient.Config{Router: g.router, Tickets: g.ticket, Log: g.log, OnFallBack: g.stats.Fallback,
		OnConnect: g.stats.Connect})
	g.ctx, g.cancel = context.WithCancel(context.Background())
	undo = append(undo, g.cancel)

	pls := g.cfg.PeerListeners
	for _, pl := range pls {
		g.peerLns = append(g.peerLns, pl.Listener)
	}
	undo = append(undo, func() {
		for _, ln := range g.peerLns {
			ln.Close()
		}
	})
	g.localLn, err = net.Listen("tcp", g.cfg.Listen)
	if errors.Is(err, syscall.EADDRINUSE) && g.cfg.ListenFallback {
		// Another user's Delta has the port (ports are per computer,
		// Deltas per user): a free one, named in local.json.
		host, port, _ := net.SplitHostPort(g.cfg.Listen)
		if g.localLn, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err == nil {
			g.AddNotice(fmt.Sprintf("The local API's port %s is taken on this computer (another user's Delta?): this Delta's is %s, in local.json, where apps and the kit find it.",
				port, g.localLn.Addr()))
		}
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("gateway: the local API cannot listen on %s, which something else holds (another Delta? --listen or DELTA_LISTEN names another address; port 0 takes a free one): %w", g.cfg.Listen, err)
	}
	if err != nil {
		return fmt.Errorf("gateway: the local API cannot listen on %s (--listen or DELTA_LISTEN): %w", g.cfg.Listen, err)
	}
	undo = append(undo, func() { g.localLn.Close() })
	if err := statedir.WriteLocal(dir, localapi.LocalFile{URL: g.LocalURL(), PID: os.Getpid()}); err != nil {
		return fmt.Errorf("gateway: write local.json: %w", err)
	}

	errLog := slog.NewLogLogger(g.log.Handler(), slog.LevelDebug)
	g.recon = reconcile.New(reconcile.Config{Calls: g.db.Calls(), Peers: g.pc, Ctx: g.ctx, Backoff: g.cfg.Backoff, Now: g.now, Log: g.log,
		OnAsk: g.stats.Ask, OnSettled: g.stats.Settled, OnAlarm: g.stats.Alarm})
	g.caller = caller.New(caller.Config{DB: g.db, Peers: g.pc, Cache: g.cache, Ctx: g.ctx, Now: g.now, Log: g.log,
		FirstAsk: g.cfg.Backoff[0], Wake: g.recon.Wake, OnCall: g.stats.Call, OnRead: g.stats.Read, OnCacheHit: g.stats.CacheHit, OnRevalidated: g.stats.Revalidated,
		OnCut: g.stats.Cut, OnResume: func() { g.stats.Inc("reads_resumed") }, OnGaveUp: g.stats.GaveUp, MaxCallBytes: g.cfg.MaxCallBytes, Transfers: g.transfers})
	g.owner = owner.New(owner.Config{DB: g.db, Self: g.Self, Log: g.log, Now: g.now, Ctx: g.ctx, Go: g.goBackground,
		OnDoorRefusal: g.stats.DoorRefusal, OnReplay: g.stats.Replay, OnFenceRefusal: func() { g.stats.Inc("fences_refused") },
		SpoolDir: spool, MaxCallBytes: g.cfg.MaxCallBytes, Transfers: g.transfers})
	g.Desk = desk.New(desk.Config{DB: g.db, Router: g.router, Reconciler: g.recon, Transfers: g.transfers, Cache: g.cache, Counters: g.stats,
		Tailnet: g.cfg.Tailnet, Self: g.Self, Notices: g.Notices, Forwards: func() []localapi.Forward { return g.forwards.List() }, Version: g.cfg.Version,
		Done: g.ctx.Done(), Now: g.now, Log: g.log})
	g.page = &statuspage.Page{Source: g, Origin: g.LocalURL, Log: g.log, Now: g.now, Token: g.token, OpenURL: g.cfg.OpenURL}
	g.local = localserver.New(localserver.Config{Backend: g, DB: g.db, Caller: g.caller, Router: g.router, PeerApps: g.pc.AppList, Counters: g.stats, Page: g.page,
		Token: g.token, StateDir: dir, OwnDoors: g.ownDoors, Log: g.log, Now: g.now})
	g.forwards = forward.New(forward.Config{Dir: dir, Serve: g.local.ServeForward,
		PageCookie: statuspage.SessionCookie, Limits: g.localLimits(), ErrLog: errLog, Log: g.log, Now: g.now})
	g.local.SetForwards(g.forwards) // made with the local API's ServeForward; made before anything serves
	g.page.API = g.local            // the setup page is the local API's client
	g.localSrv = doors.Server(g.local, errLog, g.localLimits())
	g.goBackground(func() { g.localSrv.Serve(g.localLn) })
	if err := g.forwards.Start(); err != nil {
		g.AddNotice(err.Error())
	}
	undo = append(undo, g.forwards.Close)
	var peerAddrs []string
	for _, pl := range pls {
		g.servePeer(pl, errLog)
		if pl.Name == "peer" { // static mode's one listener: its address says it all
			peerAddrs = append(peerAddrs, pl.Listener.Addr().String())
		} else {
			peerAddrs = append(peerAddrs, pl.Name+"="+pl.Listener.Addr().String())
		}
	}
	g.goBackground(g.recon.Run)
	if es, ok := g.router.(roads.EventSource); ok {
		g.goBackground(func() { g.followRoads(es.Events()) })
	}
	if pr, ok := g.router.(roads.Prober); ok {
		g.goBackground(func() { pr.Probe(g.ctx) })
	}
	g.goBackground(func() { g.pc.WatchQuiet(g.ctx) })
	if g.cfg.LaterListeners != nil {
		g.goBackground(func() {
			for {
				select {
				case <-g.ctx.Done():
					return
				case pl := <-g.cfg.LaterListeners:
					g.servePeer(pl, errLog)
				}
			}
		})
	}
	g.goBackground(func() { g.every(g.cfg.SweepEvery, g.sweep) })
	if src, ok := g.ticket.(DirectReads); ok {
		g.direct = direct.New(direct.Config{StateDir: dir, Source: src, Router: g.router, Self: g.Self, Now: g.now, Log: g.log})
		g.goBackground(func() { g.direct.Keep(g.ctx) })
	}
	g.goBackground(g.flushHeld)
	self := g.Self()
	g.log.Info("delta started", "name", self.Name, "node", self.Node, "local", g.LocalURL(), "peer_api", strings.Join(peerAddrs, " "))
	return nil
}

// servePeer serves the peer API on pl until Close or until its listener is
// closed.
func (g *Gateway) servePeer(pl PeerListener, errLog *log.Logger) {
	door := pl.Door
	if door == nil {
		door = g.door
	}
	srv := doors.Server(g.owner.Handler(door, pl.Routes), errLog, limits(peerConnsPerSource, g.refusals, g.stats))
	g.peerMu.Lock()
	g.peerSrvs = append(g.peerSrvs, srv)
	g.doorAddrs = append(g.doorAddrs, pl.Listener.Addr())
	g.peerMu.Unlock()
	ln := pl.Listener
	g.goBackground(func() { srv.Serve(ln) })
}

// followRoads acts on what the router tells of the roads: connections over
// a lost interface, or on a road dropped on evidence, are closed at once
// (busy ones too: every exchange on it ends now, DESIGN §2c), and a road
// that came up is taken at once and prompts reconciliation of its peer's
// calls.
func (g *Gateway) followRoads(events <-chan roads.Event) {
	for {
		select {
		case <-g.ctx.Done():
			return
		case e := <-events:
			switch e.Kind {
			case roads.InterfaceLost:
				g.dropInterface(e.Interface)
				for _, peer := range e.Peers {
					g.pc.CloseIdle(peer)
				}
			case roads.RoadLost:
				if n := g.pc.DropRoad(e.Peer, e.Road, e.Why); n > 0 {
					g.log.Info("closed the connections on a dropped road", "peer", e.Peer, "road", e.Road, "connections", n, "why", e.Why)
				}
			case roads.RoadUp:
				g.pc.CloseIdle(e.Peer)
				g.recon.KickPeer(e.Peer)
				if g.direct != nil {
					g.direct.Kick()
				}
			}
		}
	}
}

func (g *Gateway) goBackground(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// Close stops the gateway: listeners first (so peers are refused at once),
// then requests in flight are given a few seconds to finish. Calls still
// waiting for an owner after that are ended: each is recorded (outcome
// unknown if it left, to be reconciled after the next start) and its app is
// told so, before the connections are closed. Then background work stops
// and the journal is closed. A received call whose app has not answered
// stays "running" and becomes "interrupted" at the next start.
func (g *Gateway) Close() error {
	if g.cancel == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	g.peerMu.Lock()
	srvs := append(slices.Clone(g.peerSrvs), g.localSrv)
	g.peerMu.Unlock()
	srvs = append(srvs, g.forwards.Servers()...)
	done := make([]bool, len(srvs))
	for i, s := range srvs {
		wg.Go(func() { done[i] = s.Shutdown(ctx) == nil })
	}
	wg.Wait()
	g.caller.StopSending()
	g.cancel()      // calls still waiting end now, and background work stops
	g.caller.Wait() // each call's outcome is recorded and its app answered
	// The calls have their answers written; a second, short shutdown lets
	// their handlers finish the responses (a chunked reply's last chunk is
	// written when the handler returns) before anything is closed.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	for i, s := range srvs {
		if !done[i] && s.Shutdown(ctx2) != nil {
			s.Close()
		}
	}
	g.forwards.Close()
	g.wg.Wait()
	g.pc.CloseAll()
	g.owner.CloseIdle()
	if err := statedir.RemoveLocal(g.cfg.StateDir); err != nil {
		g.log.Warn("could not remove local.json; apps will find no Delta there anyway", "err", err)
	}
	if b := g.db.Behind(); b.Held > 0 {
		if left, ferr := g.db.Flush(context.Background()); ferr != nil {
			g.log.Error("stopping with call outcomes the journal could not write; those calls are reconciled with their owners at the next start",
				"held", left, "err", ferr)
		}
	}
	var err error
	if g.cfg.Journal == nil {
		err = g.db.Close()
	}
	if g.cfg.StateLock == nil {
		g.lock.Close()
	}
	g.cancel = nil
	return err
}

// AddNotice says something a person should know about this Delta (a
// port it could not take) in the log, and keeps it for the menu, the
// status page and /v1/status.
func (g *Gateway) AddNotice(s string) {
	g.log.Warn("notice", "notice", s)
	g.noticeMu.Lock()
	g.notices = append(g.notices, s)
	g.noticeMu.Unlock()
}

// Notices are what AddNotice said.
func (g *Gateway) Notices() []string {
	g.noticeMu.Lock()
	defer g.noticeMu.Unlock()
	return slices.Clone(g.notices)
}

// LocalURL is the local API's base URL, e.g. "http://127.0.0.1:7420".
func (g *Gateway) LocalURL() string { return "http://" + g.localLn.Addr().String() }

// Token is the local API's bearer token.
func (g *Gateway) Token() string { return g.token }

// Self names this computer.
func (g *Gateway) Self() localapi.Self {
	return g.cfg.SelfFunc()
}

// LoginLink mints a one-time link to the status page, valid for
// statuspage.LoginLinkLifetime (the menu's "Open status page", `delta open`).
func (g *Gateway) LoginLink() string { return g.page.LoginLink() }

// CallEvents are the journal's call events, for the tray's notifications.
type CallEvents struct{ db *journal.DB }

// CallEvents serves the call events (ui.Events) while the gateway runs.
func (g *Gateway) CallEvents() CallEvents { return CallEvents{g.db} }

// LastEventSeq is the newest event's sequence number, 0 if none.
func (e CallEvents) LastEventSeq(ctx context.Context) (int64, error) { return e.db.LastEventSeq(ctx) }

// EventsAfter returns up to limit events after the cursor, oldest first.
func (e CallEvents) EventsAfter(ctx context.Context, after int64, limit int) ([]record.Event, error) {
	return e.db.EventsAfter(ctx, after, limit)
}

// Call returns a call's record.
func (e CallEvents) Call(ctx context.Context, id string) (*record.Call, error) {
	return e.db.Calls().Get(ctx, id)
}

// Changed closes at the next change to the journal.
func (e CallEvents) Changed() <-chan struct{} { return e.db.Changed() }

// ownDoors are the addresses of this Delta's local API and peer
// listeners (an app registered on one would loop back).
func (g *Gateway) ownDoors() []net.Addr {
	g.peerMu.Lock()
	defer g.peerMu.Unlock()
	return append(slices.Clone(g.doorAddrs), g.localLn.Addr())
}

// Ping asks peer's Delta on each of its roads (peerclient.PingPeer).
func (g *Gateway) Ping(ctx context.Context, peer string) ([]localapi.PingRoad, error) {
	return g.pc.PingPeer(ctx, peer)
}

// dropInterface closes every connection bound to a local interface that
// went down, lost its address or vanished.
func (g *Gateway) dropInterface(iface string) {
	if n := g.pc.DropInterface(iface); n > 0 {
		g.log.Info("closed the connections over a lost interface", "interface", iface, "connections", n)
	}
	if n := g.owner.InterfaceLost(iface); n > 0 {
		g.log.Info("closed the sessions that came in over a lost interface", "interface", iface, "sessions", n)
	}
}

// every runs f every d until the gateway closes.
func (g *Gateway) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// flushHeld writes the outcomes the journal holds in memory (a full
// disk): once a second from the moment it holds one until it has written
// them all. Meanwhile it waits (Holding), so that an idle Delta has no
// timer of its own for this.
func (g *Gateway) flushHeld() {
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.db.Holding():
		}
		t := time.NewTicker(time.Second)
		for held := true; held; {
			select {
			case <-g.ctx.Done():
				t.Stop()
				return
			case <-t.C:
				held = g.flush()
			}
		}
		t.Stop()
	}
}

// flush writes the outcomes the journal holds in memory, if it can; it
// reports whether some are still held.
func (g *Gateway) flush() bool {
	b := g.db.Behind()
	if b.Held == 0 {
		return false
	}
	left, err := g.db.Flush(g.ctx)
	if err == nil && left == 0 {
		g.log.Info("the journal takes writes again: every outcome held in memory is written", "written", b.Held, "held_since", b.Since)
	}
	return left > 0 || err != nil
}

// sweep runs the retention sweep (hourly: every).
func (g *Gateway) sweep() {
	if r, err := g.db.Receipts().Sweep(g.ctx, g.now()); err != nil {
		g.log.Error("retention sweep failed", "err", err)
	} else if r.AnswersExpired+r.ReceiptsGone+r.CallsGone > 0 {
		g.log.Info("retention sweep", "answers_expired", r.AnswersExpired, "receipts_removed", r.ReceiptsGone, "calls_removed", r.CallsGone)
	}
}
