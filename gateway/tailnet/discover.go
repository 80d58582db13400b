package tailnet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"tailscale.com/ipn"
	"tailscale.com/tailcfg"

	"delta/gateway/proto"
	"delta/gateway/roads"
)

// Discovery timing.
const (
	rescanEvery    = 15 * time.Second // status re-read and lan probes, besides IPN bus events
	helloTimeout   = 5 * time.Second
	helloRetryMax  = 30 * time.Second // after peers fail hello, retried at 1, 2, 4 … s, at most this
	helloMaxAge    = 5 * time.Minute  // hello is fetched again after this
	beliefLifetime = 30 * time.Second // a road believed up is chosen for this long after it answered
	refetchEvery   = 10 * time.Second // a pin mismatch fetches hello again at most this often
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
}

// peer is an allowed node of the tailnet, named once it answered hello.
type peer struct {
	node     tailcfg.StableNodeID
	host     string // its tailnet host name, for logs until it has a name
	online   bool
	name     string
	tsAddr   string
	hello    *Hello
	helloAt  time.Time
	helloErr string
	// refetchAt is when hello was last fetched because of a pin mismatch.
	refetchAt time.Time
	fails     int // hello failures in a row
	fetching  bool
	tailnet   roadState
	local     map[roads.Road]*roadState
}

type roadState struct {
	addr      string
	iface     string
	upAt      time.Time // last time it carried something or answered a ping
	downAt    time.Time
	lastErr   string
	rtt       time.Duration
	checkedAt time.Time
}

func (r *roadState) believedUp(now time.Time) bool {
	return !r.upAt.IsZero() && r.upAt.After(r.downAt) && now.Sub(r.upAt) < beliefLifetime
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
				n.log.Warn("log in to the tailnet: open " + *note.BrowseToURL)
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
// rescanEvery, fetches hello from new peers, and probes lan roads.
func (n *Node) discover() {
	defer n.wg.Done()
	t := time.NewTicker(rescanEvery)
	defer t.Stop()
	for {
		n.refresh()
		select {
		case <-n.ctx.Done():
			return
		case <-n.kick:
		case <-t.C:
			n.probeAll()
		}
	}
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
	n.backend = st.BackendState
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
			p = &peer{node: ps.ID, local: map[roads.Road]*roadState{}}
			n.byNode[ps.ID] = p
		}
		p.host, p.online = ps.HostName, ps.Online
		ip := ps.TailscaleIPs[0]
		for _, a := range ps.TailscaleIPs {
			if a.Is4() {
				ip = a
			}
		}
		p.tsAddr = net.JoinHostPort(ip.String(), strconv.Itoa(n.cfg.TailnetPort))
		p.tailnet.addr = p.tsAddr
		due := p.hello == nil && (p.helloAt.IsZero() || now.Sub(p.helloAt) >= helloRetry(p.fails)) ||
			p.hello != nil && now.Sub(p.helloAt) > helloMaxAge
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
				n.log.Info("peer left the tailnet's network map", "peer", p.name)
			}
		}
	}
}

// helloRetry is how long after fails failed hellos to ask again.
func helloRetry(fails int) time.Duration {
	if fails <= 0 {
		return 0
	}
	return min(time.Second<<min(fails-1, 5), helloRetryMax)
}

// fetchHello asks a peer for hello over the tailnet and, if it answers as
// a Delta, names it and probes its lan roads.
func (n *Node) fetchHello(p *peer) {
	h, err := n.getHello(n.ctx, p)
	n.mu.Lock()
	p.fetching = false
	p.helloAt = time.Now()
	if err != nil {
		p.helloErr = err.Error()
		p.tailnet.lastErr, p.tailnet.downAt = err.Error(), time.Now()
		p.fails++
		retry := helloRetry(p.fails)
		n.mu.Unlock()
		// The peer's network map may lag ours (it refuses us until it
		// knows us): ask again soon.
		t := time.AfterFunc(retry, n.rescan)
		context.AfterFunc(n.ctx, func() { t.Stop() })
		return
	}
	p.fails = 0
	first := p.hello == nil
	n.applyHelloLocked(p, h)
	n.mu.Unlock()
	if first {
		n.log.Info("found a peer on the tailnet", "peer", h.Name, "node", p.node, "roads", len(h.Roads))
	}
	n.probe(p)
}

func (n *Node) getHello(ctx context.Context, p *peer) (*Hello, error) {
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	n.mu.Lock()
	addr := p.tsAddr
	n.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/delta/v1/hello", nil)
	start := time.Now()
	resp, err := n.httc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hello from %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("hello from %s: %d %s", addr, resp.StatusCode, body)
	}
	var h Hello
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("hello from %s is not JSON: %w", addr, err)
	}
	if err := proto.CheckName("peer", h.Name); err != nil {
		return nil, fmt.Errorf("hello from %s: %w", addr, err)
	}
	if len(h.Pin) != 64 {
		return nil, fmt.Errorf("hello from %s has no certificate pin", addr)
	}
	n.mu.Lock()
	p.tailnet.upAt, p.tailnet.rtt, p.tailnet.checkedAt = time.Now(), time.Since(start), time.Now()
	n.mu.Unlock()
	return &h, nil
}

func (n *Node) applyHelloLocked(p *peer, h *Hello) {
	if other, ok := n.peers[h.Name]; ok && other != p {
		n.log.Warn("two tailnet nodes call themselves the same name; keeping the first", "peer", h.Name, "first", other.node, "second", p.node)
		return
	}
	if p.name != "" && p.name != h.Name {
		delete(n.peers, p.name)
	}
	p.name, p.hello, p.helloErr = h.Name, h, ""
	n.peers[h.Name] = p
	keep := map[roads.Road]bool{}
	for _, hr := range h.Roads {
		if hr.Road != roads.LAN && hr.Road != roads.Thunderbolt {
			continue
		}
		keep[hr.Road] = true
		rs := p.local[hr.Road]
		if rs == nil || rs.addr != hr.Address {
			rs = &roadState{addr: hr.Address, iface: hr.Interface}
			p.local[hr.Road] = rs
		}
	}
	for r := range p.local {
		if !keep[r] {
			delete(p.local, r)
		}
	}
}

// probeAll pings every named peer's lan and thunderbolt roads.
func (n *Node) probeAll() {
	n.mu.Lock()
	var ps []*peer
	for _, p := range n.peers {
		ps = append(ps, p)
	}
	n.mu.Unlock()
	for _, p := range ps {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.probe(p)
		}()
	}
}

// probe pings p's lan and thunderbolt roads (GET /delta/v1/ping over pinned
// TLS with a ticket). A road that answers is believed up for 30 s.
func (n *Node) probe(p *peer) {
	n.mu.Lock()
	name := p.name
	var rs []roads.Road
	for r := range p.local {
		rs = append(rs, r)
	}
	wasUp := false
	for _, r := range p.local {
		wasUp = wasUp || r.believedUp(time.Now())
	}
	n.mu.Unlock()
	slices.Sort(rs)
	up := false
	for _, road := range rs {
		cand, err := n.candidate(name, road)
		if err != nil {
			continue
		}
		err = n.ping(cand)
		up = up || err == nil
	}
	n.mu.Lock()
	g := n.g
	n.mu.Unlock()
	if up && !wasUp && g != nil {
		g.PeerUp(name)
	}
}

func (n *Node) ping(c roads.Candidate) error {
	ctx, cancel := context.WithTimeout(n.ctx, c.Road.ConnectTimeout()+2*time.Second)
	defer cancel()
	start := time.Now()
	err := func() error {
		tk, err := n.Ticket(ctx, c.Peer, false)
		if err != nil {
			return err
		}
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return c.Dial(ctx) }, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Address+"/delta/v1/ping", nil)
		req.Header.Set("Authorization", "Delta "+tk)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			n.dropTicket(c.Peer)
		}
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("ping answered %d %s", resp.StatusCode, resp.Header.Get("X-Delta-Outcome"))
		}
		return nil
	}()
	n.Report(c, time.Since(start), err)
	return err
}
