package tailnet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"tailscale.com/ipn"
	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Discovery timing.
const (
	// rescanEvery: the tailnet's status is re-read this often, besides
	// on every IPN bus notice, until the node is running; rescanRunning,
	// once it is, when due (rereadDue), and at most rescanIdle apart.
	// Peers coming, going, going offline and back, and the tailnet's
	// health, arrive as notices; what only the re-read finds is the
	// tailnet's path to a peer (direct or relayed, shown with the road),
	// which changes only when something crosses the tailnet, and each
	// round re-reads it too (rideAlong), with hello taken along. A
	// re-read is the whole status through tsnet's local API: every 15 s
	// it was a tenth of an idle Delta's CPU, every minute about 10 ms of
	// CPU on each side.
	rescanEvery   = 15 * time.Second
	rescanRunning = time.Minute
	rescanIdle    = roundEvery
	helloTimeout  = 5 * time.Second
	helloRetryMax = 30 * time.Second // after peers fail hello, retried at 1, 2, 4 … s, at most this
	// helloNoDeltaMax: at most this between hellos to a node where no
	// Delta's door refused it (helloRetry).
	helloNoDeltaMax = 30 * time.Minute
	// helloMaxAge: hello is fetched again after this. A tailnet road that
	// carries nothing has hello fetched sooner, with its probe every 5
	// min (round.go).
	helloMaxAge  = roundEvery + time.Minute
	refetchEvery = 10 * time.Second // a pin mismatch fetches hello again at most this often
)

// Hello is the JSON of GET /delta/v1/hello.
type Hello struct {
	Name    string      `json:"name"`
	Version string      `json:"version"`
	NodeID  string      `json:"node_id"`
	Pin     string      `json:"pin"` // SHA-256 of the TLS certificate's DER, hex
	Roads   []HelloRoad `json:"roads"`
}

// HelloRoad is one lan or thunderbolt address of the TLS listener.
type HelloRoad struct {
	Road      roads.Road `json:"road"`
	Address   string     `json:"address"` // host:port
	Interface string     `json:"interface,omitempty"`
	// MAC is the interface's hardware address, published only when this
	// computer allows its peers to wake it (wake.go).
	MAC string `json:"mac,omitempty"`
}

// peer is an allowed node of the tailnet, named once it answered hello.
// What is known of its roads is in the route book.
type peer struct {
	node   tailcfg.StableNodeID
	host   string // its tailnet host name, for logs until it has a name
	online bool
	// curAddr and relay are how the tailnet reaches it now (tsnet's
	// CurAddr: direct, at that address; else relayed through DERP relay).
	curAddr, relay string
	lastSeen       time.Time // when the tailnet last saw it, while offline
	// wokeAt and wokeTo are the last wake-ups sent to it (wake.go).
	wokeAt   time.Time
	wokeTo   []string
	name     string
	tsAddr   string
	hello    *Hello
	helloAt  time.Time
	helloErr string
	// refetchAt is when hello was last fetched because of a pin mismatch.
	refetchAt time.Time
	fails     int // hello failures in a row
	// refused: the last hello that failed was a door's refusal (401 or
	// 403: a Delta that does not know this one yet), not no answer or
	// another: helloRetry.
	refused  bool
	fetching bool
}

// watch turns IPN bus notifications into rescans.
func (n *Node) watch() {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		w, err := n.lc.WatchIPNBus(n.ctx, ipn.NotifyInitialState|ipn.NotifyPeerChanges)
		if err != nil {
			n.sleep(time.Second)
			continue
		}
		for {
			note, err := w.Next()
			if err != nil {
				break
			}
			if note.ErrMessage != nil {
				n.mu.Lock()
				n.lastErr = *note.ErrMessage
				n.mu.Unlock()
			}
			if note.BrowseToURL != nil {
				n.mu.Lock()
				n.authURL = *note.BrowseToURL
				n.mu.Unlock()
				n.book.Touch()
				n.log.Warn("log in to the tailnet: open the login URL", "login_url", *note.BrowseToURL)
			}
			n.rescan()
		}
		w.Close()
	}
}

func (n *Node) sleep(d time.Duration) {
	select {
	case <-n.ctx.Done():
	case <-time.After(d):
	}
}

func (n *Node) rescan() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// discover re-reads the tailnet's status on every rescan and every
// rescanEvery (rescanRunning once the node runs, when due: rereadDue),
// and fetches hello from new peers.
func (n *Node) discover() {
	defer n.wg.Done()
	every := rescanEvery
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n.refresh()
		read := time.Now()
		n.mu.Lock()
		next := rescanEvery
		if n.backend == "Running" {
			next = rescanRunning
		}
		n.mu.Unlock()
		if next != every {
			// A ticker, not a timer reset at each rescan: bus notices
			// do not push the next re-read back.
			every = next
			t.Reset(every)
		}
	wait:
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-n.kick:
				break wait
			case <-t.C:
				if n.rereadDue(read) {
					break wait
				}
			}
		}
	}
}

// rereadDue reports whether the timed re-read after one made at read is
// worth what it costs: until the node runs, always; once it runs, when
// the tailnet road to a peer answered anything since (a use or a probe:
// its path may have changed), when an online node that has not answered
// hello yet is due to be asked again (helloRetry; the re-read asks it),
// or rescanIdle after read.
// Notices (peers coming, going, going offline, the tailnet's health)
// re-read at once whatever this says.
func (n *Node) rereadDue(read time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.backend != "Running" || time.Since(read) >= rescanIdle {
		return true
	}
	now := time.Now()
	for _, p := range n.byNode {
		if p.online && helloDue(p, now) {
			return true
		}
	}
	for name := range n.peers {
		if n.book.AnsweredSince(name, roads.Tailnet, read) {
			return true
		}
	}
	return false
}

func (n *Node) refresh() {
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	st, err := n.lc.Status(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.backend != st.BackendState || st.AuthURL != "" && st.AuthURL != n.authURL {
		defer n.book.Touch() // the menu's "Log in to tailnet…" follows
	}
	n.backend = st.BackendState
	n.health = st.Health
	if (st.BackendState == "NeedsLogin" || st.BackendState == "NoState") && st.AuthURL == "" && n.authURL == "" &&
		!n.loginSaid && now.Sub(n.started) >= noLoginWait {
		n.loginSaid = true
		n.log.Warn("no login URL yet", "why", n.noLoginURLLocked(now))
	}
	if st.AuthURL != "" {
		n.authURL = st.AuthURL
	}
	if st.BackendState == "Running" {
		n.authURL = ""
	}
	if st.Self != nil && st.Self.ID != "" {
		n.self.Node = string(st.Self.ID)
		n.selfUser = st.Self.UserID
	}
	n.account, n.tailnet = "", ""
	if st.Self != nil && st.BackendState == "Running" {
		n.account = st.User[st.Self.UserID].LoginName
		if st.CurrentTailnet != nil {
			n.tailnet = st.CurrentTailnet.Name
		}
	}
	n.self.Name = n.cfg.Hostname
	seen := map[tailcfg.StableNodeID]bool{}
	for _, ps := range st.Peer {
		var tags []string
		if ps.Tags != nil {
			tags = ps.Tags.AsSlice()
		}
		login := st.User[ps.UserID].LoginName
		if !n.allowedLocked(ps.UserID, tags, login, ps.ID) || len(ps.TailscaleIPs) == 0 {
			continue
		}
		seen[ps.ID] = true
		p := n.byNode[ps.ID]
		if p == nil {
			p = &peer{node: ps.ID}
			n.byNode[ps.ID] = p
		}
		p.host, p.online, p.curAddr, p.relay, p.lastSeen = ps.HostName, ps.Online, ps.CurAddr, ps.Relay, ps.LastSeen
		if p.name != "" && n.peers[p.name] == p {
			n.setOfflineLocked(p)
		}
		ip := ps.TailscaleIPs[0]
		for _, a := range ps.TailscaleIPs {
			if a.Is4() {
				ip = a
			}
		}
		p.tsAddr = net.JoinHostPort(ip.String(), strconv.Itoa(n.cfg.TailnetPort))
		due := helloDue(p, now) || p.hello != nil && now.Sub(p.helloAt) > helloMaxAge
		if p.online && due && !p.fetching {
			p.fetching = true
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.fetchHello(p)
			}()
		}
	}
	for id, p := range n.byNode {
		if !seen[id] {
			delete(n.byNode, id)
			if p.name != "" && n.peers[p.name] == p {
				delete(n.peers, p.name)
				n.book.Remove(p.name)
				n.log.Info("peer left the tailnet's network map", "peer", p.name)
			}
		}
	}
	if st.BackendState == "Running" && st.Self != nil {
		// The network map is whole now: a remembered peer that is not in
		// it (or no longer allowed) is gone.
		inMap := map[string]bool{}
		for id := range seen {
			inMap[string(id)] = true
		}
		for _, name := range n.rememberedNamesLocked() {
			if rp := n.remembered[name]; !inMap[rp.Node] {
				n.log.Info("a peer found before is no longer on the tailnet", "peer", name, "node", rp.Node)
				n.forgetLocked(name)
			}
		}
	}
}

// helloRetry is how long after fails failed hellos to ask again: 1, 2,
// 4 … s, at most helloRetryMax while a door refused it (a Delta whose
// network map does not have this one yet refuses it for a moment), at
// most helloNoDeltaMax otherwise (nothing answered, or not as a Delta
// does): a phone, or a computer without Delta, is online on most
// tailnets for good, and each hello wakes the tailnet's session to it
// (Tailscale's pings every 3 s for 45 s, its netcheck; and the phone). A
// Delta that starts there later asks this one for hello, and that
// arriving (peerUpkeep) asks it at once.
func helloRetry(fails int, refused bool) time.Duration {
	if fails <= 0 {
		return 0
	}
	limit := helloNoDeltaMax
	if refused {
		limit = helloRetryMax
	}
	d := min(time.Second<<min(fails-1, 11), limit)
	return d / time.Second * helloRetryUnit
}

// helloRetryUnit is what helloRetry counts as a second (a test's may be
// shorter).
var helloRetryUnit = time.Second

// helloDue reports whether p, which has not answered hello, is due to
// be asked (never asked, or helloRetry passed since the last failure).
func helloDue(p *peer, now time.Time) bool {
	return p.hello == nil && (p.helloAt.IsZero() || now.Sub(p.helloAt) >= helloRetry(p.fails, p.refused))
}

// fetchHello asks a peer for hello over the tailnet and, if it answers as
// a Delta, names it and probes its lan roads.
func (n *Node) fetchHello(p *peer) {
	h, refused, err := n.getHello(n.ctx, p)
	n.mu.Lock()
	p.fetching = false
	p.helloAt = time.Now()
	if err != nil {
		p.helloErr = err.Error()
		p.fails++
		p.refused = refused
		retry := helloRetry(p.fails, p.refused)
		n.mu.Unlock()
		// The peer's network map may lag ours (it refuses us until it
		// knows us): asked again soon, if a door refused.
		t := time.AfterFunc(retry, n.rescan)
		context.AfterFunc(n.ctx, func() { t.Stop() })
		return
	}
	p.fails, p.refused = 0, false
	first := p.hello == nil
	n.applyHelloLocked(p, h)
	n.mu.Unlock()
	if first {
		n.log.Info("found a peer on the tailnet", "peer", h.Name, "node", p.node, "roads", len(h.Roads))
		n.router.Kick()
	}
}

// getHello asks p for hello; refused says that it failed as a door's
// refusal (401 or 403).
func (n *Node) getHello(ctx context.Context, p *peer) (h *Hello, refused bool, err error) {
	ctx, cancel := context.WithTimeout(metered(ctx, &n.upkeep.hello), helloTimeout)
	defer cancel()
	n.mu.Lock()
	addr := p.tsAddr
	n.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+proto.PathHello, nil)
	resp, err := n.httc.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("hello from %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		refused = resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
		return nil, refused, fmt.Errorf("hello from %s: %d %s", addr, resp.StatusCode, body)
	}
	h = &Hello{}
	if err := json.Unmarshal(body, h); err != nil {
		return nil, false, fmt.Errorf("hello from %s is not JSON: %w", addr, err)
	}
	if err := proto.CheckName("peer", h.Name); err != nil {
		return nil, false, fmt.Errorf("hello from %s: %w", addr, err)
	}
	if len(h.Pin) != 64 {
		return nil, false, fmt.Errorf("hello from %s has no certificate pin", addr)
	}
	return h, false, nil
}

func (n *Node) applyHelloLocked(p *peer, h *Hello) {
	if other, ok := n.peers[h.Name]; ok && other != p {
		n.log.Warn("two tailnet nodes call themselves the same name; keeping the first", "peer", h.Name, "first", other.node, "second", p.node)
		return
	}
	if p.name != "" && p.name != h.Name {
		delete(n.peers, p.name)
		n.book.Remove(p.name)
		n.forgetLocked(p.name)
	}
	p.name, p.hello, p.helloErr = h.Name, h, ""
	n.peers[h.Name] = p
	n.book.Set(h.Name, n.candidatesLocked(p))
	n.setOfflineLocked(p)
	n.rememberLocked(p)
}

// setOfflineLocked tells the route book what the tailnet's map says of p:
// its tailnet road is not dialled while the map has it offline (its lan
// and thunderbolt roads still are: a Mac off the internet may still be on
// the cable). Back online, the road is probed at once.
func (n *Node) setOfflineLocked(p *peer) {
	if !n.book.SetOffline(p.name, roads.Tailnet, !p.online, p.lastSeen) {
		return
	}
	if p.online {
		n.log.Info("peer is online on the tailnet again", "peer", p.name)
		n.router.Kick()
		return
	}
	n.log.Info("peer is offline on the tailnet: its tailnet road is not dialled until the tailnet says it is back", "peer", p.name, "last_seen", p.lastSeen)
}

// rebindLocked recomputes every peer's candidates after this computer's
// interfaces changed (a road's local interface may be another now).
func (n *Node) rebindLocked() {
	for _, p := range n.peers {
		if p.hello != nil {
			n.book.Set(p.name, n.candidatesLocked(p))
			n.setOfflineLocked(p)
		}
	}
}

// ping probes one road with GET /delta/v1/ping (with a ticket on lan and
// thunderbolt, renewed once when refused; on the connection kept from the
// last probe on those two: peerclient.KeptPings, as every mode
// pings), counted as upkeep: the route book's prober
// (routes.Router.Probe) reports what it learned. A tailnet probe that
// answers takes along the rest of the round's upkeep (rideAlong).
func (n *Node) ping(ctx context.Context, c roads.Candidate) error {
	if c.Road == roads.Tailnet {
		n.upkeep.rounds.Add(1)
	}
	err := n.kept.Probe(metered(ctx, &n.upkeep.probe), c, n, c.Dial)
	if err == nil && c.Road == roads.Tailnet {
		n.rideAlong(ctx, c.Peer)
	}
	return err
}
