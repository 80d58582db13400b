// Package tailnet joins Delta to the person's tailnet in-process (tsnet) and
// builds the roads on it: the tailnet road itself, and the lan and
// thunderbolt roads whose addresses and certificate pins peers learn over
// it (DESIGN §1, §4).
//
// A Node is the tsnet server plus what rides on it: the tailnet listener
// (port 7421, callers identified by WhoIs), the TLS listeners on this
// computer's lan and thunderbolt addresses (port 7422, callers identified by
// tickets bound to their client certificate), hello and tickets, peer
// discovery from the tailnet's status, and a roads.Router over the peers.
// Attach wires it into a gateway.Config; the gateway's call path does not
// change.
//
// This package imports tsnet, so it is tested without -race (see Makefile).
package tailnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/envknob"
	"tailscale.com/ipn"
	"tailscale.com/logtail"
	"tailscale.com/tailcfg"
	"tailscale.com/tsnet"
	"tailscale.com/util/testenv"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/rawsock"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/localroads"
	"github.com/delta-roads/delta/gateway/roads/routes"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/view"
	"github.com/delta-roads/delta/netwatch"
)

// Ports (DESIGN §8).
const (
	DefaultTailnetPort = 7421 // the peer API on the tailnet
	DefaultLANPort     = 7422 // the TLS listener on lan and thunderbolt addresses
)

// Config configures a Node.
type Config struct {
	// StateDir is Delta's state folder; tsnet keeps its state in
	// StateDir/tailnet, the certificate and ticket key beside it. Required.
	StateDir string
	// Hostname is this computer's name on the tailnet. If empty, the
	// machine's host name.
	Hostname string
	// ControlURL is the control server. If empty, Tailscale's.
	ControlURL string
	// AuthKey logs in unattended. If empty, login is interactive: the URL
	// is in Status().
	AuthKey string
	// TailnetPort is the tailnet listener's port. If 0, 7421.
	TailnetPort int
	// LANPort is the TLS listener's port on lan and thunderbolt addresses.
	// If 0, a free port per address (tests); the app passes 7422.
	LANPort int
	// LANPortFallback takes a free port (one, for every address) when
	// LANPort is in use: the default port, which another user's Delta may
	// hold. Notices says so.
	LANPortFallback bool
	// LANAddrs are the addresses to serve the TLS listener on, each
	// "IP" or "IP%interface" with an optional "road=" prefix
	// ("thunderbolt=169.254.3.1%bridge0"). If nil, this computer's lan and
	// thunderbolt interfaces (netwatch).
	LANAddrs []string
	// Allow lets nodes other than this tailnet user's own in: login names,
	// tags ("tag:x") or stable node IDs.
	Allow []string
	// AllowWake lets this computer's peers wake it: hello publishes the
	// MAC address of each lan and thunderbolt listener's interface
	// (config.json "wake_on_lan": true).
	AllowWake bool
	// Roads fixes the road of named interfaces (tests; hardware netwatch
	// does not recognise). If nil, netwatch classifies them.
	Roads map[string]roads.Road
	// Ephemeral registers the node as ephemeral (tests).
	Ephemeral bool
	// Logger receives the log. If nil, nothing is logged.
	Logger *slog.Logger
	// TSLogf, if not nil, receives tsnet's own (verbose) log. If nil, it
	// is dropped.
	TSLogf func(format string, args ...any)
	// UploadLogs lets tsnet upload its log to Tailscale's log server, for a
	// person who wants Tailscale's support to see it. If false (the
	// default), the upload is turned off before tsnet starts
	// (TS_NO_LOGS_NO_SUPPORT), and the node talks only to the control
	// server and the DERP relays it names.
	UploadLogs bool
	// Version is reported in hello.
	Version string
	// AfterRound, if not nil, is called each time a round's upkeep with a
	// peer is done (its probe answered and what rode along with it
	// returned: round.go), on the round's goroutine: it must return at
	// once. The app glances at its memory a little after (app/trim.go).
	AfterRound func()
}

// Node is this computer on the tailnet. Create it with New, Start it, and
// Attach it to a gateway.Config. It never calls the gateway: it tells what
// happens to the roads (Events) and hands over new listeners
// (Config.LaterListeners).
type Node struct {
	cfg  Config
	log  *slog.Logger
	srv  *tsnet.Server
	lc   *local.Client
	key  ticket.Key
	cert tls.Certificate
	pin  string
	httc *http.Client // over the tailnet, for hello, tickets and pings

	tailLn net.Listener
	// router is the road keeper both modes share; book is its route book.
	router *routes.Router
	// kept holds the probes' connections to lan and thunderbolt roads
	// between probes (peerclient.KeptPings); closed when the prober stops.
	kept *peerclient.KeptPings
	book *routes.Book
	mon  *netwatch.Monitor

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	kick     chan struct{}
	upkeep   upkeep
	saveKick chan struct{}
	started  time.Time // when Start was called

	// lan are the TLS listeners on this computer's lan and thunderbolt
	// addresses.
	lan *localroads.Listeners

	mu sync.Mutex

	noticeMu sync.Mutex
	notices  []string

	checked  ticket.Checked // tickets verified already (door.go)
	ifaces   netwatch.State
	self     localapi.Self
	selfUser tailcfg.UserID
	backend  string // BackendState
	authURL  string
	lastErr  string
	health   []string // tsnet's health warnings, as its status says them
	// account and tailnet are whom this node is logged in as, and to
	// which tailnet ("" when not running).
	account, tailnet string
	// loginSaid: the log has said why no login URL came.
	loginSaid bool
	peers     map[string]*peer               // by name
	byNode    map[tailcfg.StableNodeID]*peer // every allowed node seen, named or not
	tickets   map[string]heldTicket          // by peer name
	// readTickets are the read tickets held for direct reads, by peer
	// name (ReadTicket).
	readTickets map[string]heldTicket
	newLns      chan gateway.PeerListener // TLS listeners opened after Attach
	// remembered are the peers found before, kept in peers.json: known at
	// once after a start, before discovery finds them again.
	remembered map[string]statedir.Peer
}

type heldTicket struct {
	t   string
	exp time.Time
}

// New checks cfg and returns a Node that is not started.
func New(cfg Config) (*Node, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("tailnet: no state folder")
	}
	if cfg.Hostname == "" {
		h, err := netwatch.ComputerName() // LocalHostName on macOS, not a DHCP-given host name
		if err != nil {
			return nil, fmt.Errorf("tailnet: no --hostname, and %w", err)
		}
		cfg.Hostname = h
	}
	cfg.Hostname = strings.ToLower(cfg.Hostname)
	if cfg.TailnetPort == 0 {
		cfg.TailnetPort = DefaultTailnetPort
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), saveKick: make(chan struct{}, 1),
		ifaces: netwatch.Read(cfg.Roads),
		peers:  map[string]*peer{}, byNode: map[tailcfg.StableNodeID]*peer{}, tickets: map[string]heldTicket{}, readTickets: map[string]heldTicket{},
		newLns: make(chan gateway.PeerListener, eventBuffer)}
	n.router = routes.NewRouter(routes.New(nil, cfg.Logger), n.ping, cfg.Logger)
	n.kept = peerclient.NewKeptPings()
	n.book = n.router.Book()
	return n, nil
}

// Start starts tsnet (without waiting for login), the listeners and peer
// discovery. On error, whatever it started is closed.
func (n *Node) Start() (err error) {
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	n.started = time.Now()
	if n.remembered, err = statedir.ReadPeers(n.cfg.StateDir); err != nil {
		// Only a help for the moments after a start: say so, go on.
		n.log.Warn("the peers found before are not known until discovery finds them again", "err", err)
		n.remembered = map[string]statedir.Peer{}
	}
	dir := filepath.Join(n.cfg.StateDir, statedir.TailnetDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tailnet: make %s: %w", dir, err)
	}
	if n.key, err = ticket.LoadOrCreate(filepath.Join(n.cfg.StateDir, statedir.TicketKeyFile)); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	if n.cert, n.pin, err = pintls.LoadOrCreate(n.cfg.StateDir, n.cfg.Hostname); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	if !n.cfg.UploadLogs {
		// tsnet uploads its log to log.tailscale.com unless this is set
		// (tsnet.Server.startLogger, logpolicy.TransportOptions.New); it
		// is read when tsnet starts, so it is set before.
		envknob.SetNoLogsNoSupport()
		// With that alone, tsnet's logtail still writes every line of
		// its log to a buffer file and wakes to compress it and try an
		// upload the transport then refuses: a few per cent of an idle
		// Delta's CPU. Disabled, the lines are dropped as they come (they
		// still reach TSLogf: tailscale.log).
		logtail.Disable()
	}
	logf := n.cfg.TSLogf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	n.srv = &tsnet.Server{
		Dir:        dir,
		Hostname:   n.cfg.Hostname,
		ControlURL: n.cfg.ControlURL,
		AuthKey:    n.cfg.AuthKey,
		Ephemeral:  n.cfg.Ephemeral,
		Logf:       logf,
		UserLogf: func(format string, args ...any) {
			n.log.Info("tailnet", "says", strings.TrimSpace(fmt.Sprintf(format, args...)))
		},
	}
	if err := n.srv.Start(); err != nil {
		return fmt.Errorf("tailnet: start tsnet: %w", err)
	}
	undo = append(undo, func() { n.srv.Close() })
	if err := setTimeWait(n.srv); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	if n.lc, err = n.srv.LocalClient(); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	if n.tailLn, err = n.srv.Listen("tcp", ":"+strconv.Itoa(n.cfg.TailnetPort)); err != nil {
		return fmt.Errorf("tailnet: listen on port %d of the tailnet: %w", n.cfg.TailnetPort, err)
	}
	undo = append(undo, func() { n.tailLn.Close() })
	n.lan = localroads.New(localroads.Config{Port: n.cfg.LANPort, PortFallback: n.cfg.LANPortFallback, Addrs: n.cfg.LANAddrs,
		Wrap: func(ln net.Listener) net.Listener {
			return tls.NewListener(rawsock.Listener(ln), pintls.ServerConfig(n.cert))
		}, Notice: n.addNotice, Log: n.log})
	if err := n.lan.Open(n.ifaces); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	undo = append(undo, n.lan.Close)
	// Hellos and tickets, a few an hour for each peer: a connection each,
	// so that its bytes are counted to the request's kind (upkeep.go).
	n.httc = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := n.srv.Dial(ctx, network, addr)
			return meterConn(ctx, c), err
		},
		DisableKeepAlives: true,
	}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if n.mon, err = netwatch.Start(netwatch.Options{OnChange: n.onNetChange, Roads: n.cfg.Roads, Logger: n.log}); err != nil {
		return fmt.Errorf("tailnet: %w", err)
	}
	n.wg.Add(4)
	go n.watch()
	go n.discover()
	go func() {
		defer n.wg.Done()
		defer n.kept.Close() // after the probes, which Probe waits for
		n.router.Probe(n.ctx)
	}()
	go n.saver()
	return nil
}

// Notices are what a person should know about this node (a port it could
// not take).
func (n *Node) Notices() []string {
	n.noticeMu.Lock()
	defer n.noticeMu.Unlock()
	return slices.Clone(n.notices)
}

// followLAN opens and closes TLS listeners as this computer's lan and
// thunderbolt addresses come and go (when they are not configured), and
// hands the new ones to the gateway.
func (n *Node) followLAN(st netwatch.State) {
	for _, l := range n.lan.Follow(st) {
		select {
		case n.newLns <- gateway.PeerListener{Name: string(l.Road), Listener: l.Listener, Door: ticketDoor{n}}:
		default:
			n.log.Warn("no gateway takes new listeners; the new address is not served", "address", l.Addr())
			n.lan.Drop(l)
		}
	}
}

// addNotice keeps what a person should know (a port taken) for status.
func (n *Node) addNotice(note string) {
	n.noticeMu.Lock()
	n.notices = append(n.notices, note)
	n.noticeMu.Unlock()
}

// eventBuffer bounds the listeners waiting for the gateway.
const eventBuffer = 256

// Events implements roads.EventSource.
func (n *Node) Events() <-chan roads.Event { return n.router.Events() }

// onNetChange reacts to netwatch: roads over an interface that went down or
// lost its address are dropped at once and their connections closed, busy
// ones too;
// roads over one that came up are probed every 100 ms for 3 s; after sleep,
// every road is probed; the TLS listeners follow the addresses.
func (n *Node) onNetChange(st netwatch.State, c netwatch.Change) {
	for _, iface := range c.Lost {
		n.router.InterfaceLost(iface)
	}
	n.mu.Lock()
	n.ifaces = st
	n.rebindLocked()
	n.mu.Unlock()
	n.followLAN(st)
	n.router.InterfacesGained(c.Gained, c.Woke)
}

// Attach wires the node into a gateway's config: its router, tickets,
// identity, status, and the tailnet and TLS listeners with their doors.
func (n *Node) Attach(cfg *gateway.Config) {
	cfg.Router = n
	cfg.Door = ticketDoor{n} // for a listener without a door of its own
	cfg.Tickets = n
	cfg.SelfFunc = n.Self
	cfg.Tailnet = n
	cfg.PeerListeners = []gateway.PeerListener{{Name: "tailnet", Listener: n.tailLn, Door: whoisDoor{n}, Routes: n.routes}}
	cfg.LaterListeners = n.newLns
	for _, l := range n.lan.All() {
		cfg.PeerListeners = append(cfg.PeerListeners, gateway.PeerListener{Name: string(l.Road), Listener: l.Listener, Door: ticketDoor{n}})
	}
}

// Close leaves the tailnet and closes the listeners the gateway has not
// closed already.
func (n *Node) Close() error {
	if n.cancel == nil {
		return nil
	}
	n.mon.Close()
	n.cancel()
	n.wg.Wait()
	n.tailLn.Close()
	n.lan.Close()
	n.httc.CloseIdleConnections()
	err := n.srv.Close()
	n.cancel = nil
	return err
}

// Self names this computer: its tailnet host name and stable node ID
// (empty until logged in).
func (n *Node) Self() localapi.Self {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.self
	if s.Name == "" {
		s.Name = n.cfg.Hostname
	}
	return s
}

// Pin is the hex SHA-256 of this computer's TLS certificate.
func (n *Node) Pin() string { return n.pin }

// Status reports the login state and, when peers are missing, why.
func (n *Node) Status() localapi.TailnetStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := localapi.TailnetStatus{State: n.backend, LoginURL: n.authURL, Pin: n.pin, LAN: []string{},
		LogUpload: LogUploadOn(), ControlURL: n.controlURL(), Account: n.account, Tailnet: n.tailnet}
	for _, l := range n.lan.All() {
		st.LAN = append(st.LAN, string(l.Road)+" "+l.Addr().String())
	}
	switch {
	case n.backend == "NeedsLogin" && n.authURL != "":
		st.Message = "not logged in to the tailnet: open " + n.authURL + " to log in; until then there are no peers"
	case n.backend == "NeedsLogin" || n.backend == "NoState" || n.backend == "":
		st.Message = n.noLoginURLLocked(time.Now())
	case n.backend == "NeedsMachineAuth":
		st.Message = "this computer waits for approval by the tailnet's admin"
	case n.backend != "Running":
		st.Message = "connecting to the tailnet (" + n.backend + ")"
		if n.lastErr != "" {
			st.Message += ": " + n.lastErr
		}
	case len(n.peers) == 0:
		st.Message = "logged in; no other computer of this tailnet user answers as a Delta yet"
	default:
		st.Message = fmt.Sprintf("logged in; %d peer%s", len(n.peers), map[bool]string{true: "s"}[len(n.peers) != 1])
	}
	return st
}

// noLoginWait is how long a missing login URL counts as "asking" before
// the status and the log say why none came.
const noLoginWait = 10 * time.Second

// controlURL is the control server this node logs in to.
func (n *Node) controlURL() string {
	if n.cfg.ControlURL != "" {
		return n.cfg.ControlURL
	}
	return ipn.DefaultControlURL
}

// noLoginURLLocked says why there is no login URL yet: the first seconds,
// asking; after them, that the control server has not given one, naming
// it and what tsnet's health says (it cannot be reached, say).
func (n *Node) noLoginURLLocked(now time.Time) string {
	waited := now.Sub(n.started)
	if waited < noLoginWait {
		return "asking the control server " + n.controlURL() + " for a login URL; set DELTA_TS_AUTHKEY to log in without one"
	}
	why := "it has not answered (it cannot be reached, or it is slow)"
	if len(n.health) > 0 {
		why = strings.Join(n.health, "; ")
	} else if n.lastErr != "" {
		why = n.lastErr
	}
	return fmt.Sprintf("no login URL after %s from the control server %s: %s; Delta keeps trying (tsnet's own log: tailscale.log)",
		waited.Round(time.Second), n.controlURL(), why)
}

// LogUploadOn reports whether tsnet would upload its log to Tailscale in
// this process: not once TS_NO_LOGS_NO_SUPPORT is set (a Node started
// without UploadLogs sets it), nor in a test binary.
func LogUploadOn() bool { return !envknob.NoLogsNoSupport() && !testenv.InTest() }

// Summary implements gateway.TailnetReporter: whether a person must log
// in, and where.
func (n *Node) Summary() view.TailnetSummary {
	s := n.Status()
	return view.TailnetSummary{State: s.State, LoginURL: s.LoginURL, Message: s.Message,
		NeedsLogin: s.State == "NeedsLogin" || s.State == "NeedsMachineAuth", Account: s.Account, Tailnet: s.Tailnet, ControlURL: s.ControlURL}
}

var _ gateway.TailnetReporter = (*Node)(nil)
