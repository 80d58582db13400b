package static

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/netwatch"
)

// Pairing with a person's yes on each side, in Syncthing's way (a device
// that connects and is not known is shown as "wants to connect: add?"):
//
//   - A person here pairs a computer by its ID and address (heard nearby,
//     or pasted): it is written to config.json and pinned at once, and
//     the computer is asked (POST proto.PathPair, over TLS pinned to its
//     ID, the one request its door takes from a computer it has not
//     paired).
//   - There, the request is kept (bounded, rate-limited, its name the
//     asker's word only) and shown on the page, in the menu and as a
//     notification, until a person accepts or ignores it. Accepting pairs
//     the asker the same way and asks it back, which it answers "paired".
//
// Until both have said yes, neither door admits the other: each road's
// probe is refused there, and the page says whom it waits for.
const (
	// MaxPairRequests bounds the requests kept waiting for a person: a
	// new computer asking past it is refused, and those kept stay.
	MaxPairRequests = 8
	// pairAskBytes bounds a request's body.
	pairAskBytes = 1 << 10
	// pairAskWait bounds asking a peer (a person waits on the page).
	pairAskWait = 5 * time.Second
	// maxIgnored bounds the IDs a person ignored, kept until Delta stops.
	maxIgnored = 256
	// saidFor is how long a peer's word that it has paired this computer
	// stands for its state when no road to it is up (its roads are
	// probed at once).
	saidFor = time.Minute
)

// pairAsks is how often new computers may ask to pair, all together: one
// every two seconds, ten at once (a computer asking again is not new).
func pairAsks() *rate.Limiter { return rate.NewLimiter(rate.Every(2*time.Second), 10) }

// asked is what this computer last heard when it asked a peer to pair.
type asked struct {
	at     time.Time
	state  string // localapi.PairAsked, or PairWaiting with detail
	detail string
}

// Pairing pairs and unpairs static mode's peers while Delta runs: its
// config.json, its seal's pins, its router's roads and its discovery all
// change at once.
type Pairing struct {
	dir     string
	seal    *Seal
	router  *Router
	tickets *SignedTickets
	port    int // this computer's peer API port, said when asking
	now     func() time.Time
	log     *slog.Logger
	limit   *rate.Limiter

	cfgMu sync.Mutex // config.json's read, change and write

	mu       sync.Mutex
	self     localapi.Self // its name a person may change (Rename)
	requests map[identity.ID]localapi.PairRequest
	ignored  map[identity.ID]bool
	asked    map[string]asked // by peer name
}

func newPairing(dir string, seal *Seal, router *Router, tickets *SignedTickets, self localapi.Self, port int, now func() time.Time, log *slog.Logger) *Pairing {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pairing{dir: dir, seal: seal, router: router, tickets: tickets, self: self, port: port, now: now, log: log, limit: pairAsks(),
		requests: map[identity.ID]localapi.PairRequest{}, ignored: map[identity.ID]bool{}, asked: map[string]asked{}}
}

// Routes registers the pair request's handler on a peer listener's mux.
func (p *Pairing) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+proto.PathPair, p.serveAsk)
}

// serveAsk is a computer's request to pair (POST proto.PathPair): its ID
// is its certificate's, proved at the handshake (IDDoor admits only this
// path from an ID that is not paired). A paired ID is answered "paired",
// and its roads are probed now; another is kept for a person here.
func (p *Pairing) serveAsk(w http.ResponseWriter, r *http.Request) {
	pin := pintls.ClientPin(r.TLS)
	id, err := identity.FromPin(pin)
	if err != nil {
		pairRefused(w, http.StatusForbidden, proto.PeerForbidden, "the connection's certificate is not a Delta's")
		return
	}
	if name, ok := p.seal.Name(pin); ok {
		p.mu.Lock()
		delete(p.requests, id)
		p.mu.Unlock()
		p.router.Kick() // it has paired this computer: its roads answer now
		p.log.Info("pairing: a paired peer asked to pair: it has paired this computer too", "peer", name)
		proto.WriteJSON(w, http.StatusOK, proto.PairReplyJSON{State: localapi.PairPaired})
		return
	}
	var ask proto.PairAskJSON
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, pairAskBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ask); err != nil {
		pairRefused(w, http.StatusBadRequest, proto.PeerBadRequest, "the request to pair is not {\"name\", \"port\"}: "+err.Error())
		return
	}
	if err := proto.CheckName("computer", ask.Name); err != nil {
		pairRefused(w, http.StatusBadRequest, proto.PeerBadRequest, err.Error())
		return
	}
	if ask.Port < 1 || ask.Port > 65535 {
		pairRefused(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("port %d is not one of 1-65535", ask.Port))
		return
	}
	src, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		pairRefused(w, http.StatusBadRequest, proto.PeerBadRequest, "the connection's address "+r.RemoteAddr+" is not IP:PORT")
		return
	}
	road := roadFor(p.router.state(), src.Addr())
	if p.seal.Pin(ask.Name) != "" {
		ask.Name = "" // a stranger never shows as a paired peer (D4): a person names it
	}
	req := localapi.PairRequest{ID: id.String(), Name: ask.Name, Road: string(road),
		Address: netip.AddrPortFrom(src.Addr().Unmap(), uint16(ask.Port)).String(), At: p.now()}
	p.mu.Lock()
	_, known := p.requests[id]
	self := p.self.Name
	switch {
	case p.ignored[id]:
		p.mu.Unlock()
		proto.WriteJSON(w, http.StatusAccepted, proto.PairReplyJSON{State: localapi.PairAsked}) // a person here said no; it is not told
		return
	case !known && len(p.requests) >= MaxPairRequests:
		p.mu.Unlock()
		pairRefused(w, http.StatusTooManyRequests, proto.PeerBusy, fmt.Sprintf("%d computers are waiting already for a person on %s to answer them", MaxPairRequests, self))
		return
	case !known && !p.limit.Allow():
		p.mu.Unlock()
		w.Header().Set("Retry-After", "2")
		pairRefused(w, http.StatusTooManyRequests, proto.PeerBusy, "too many computers are asking to pair with "+self+" now; ask again in a few seconds")
		return
	}
	p.requests[id] = req
	p.mu.Unlock()
	if !known {
		p.log.Info("pairing: a computer asks to pair; a person here accepts or ignores it (the setup page, the menu, delta pairing)",
			"id", id.String(), "name", ask.Name, "address", req.Address)
	}
	p.router.Book().Touch() // the status changed: the menu and the page show the request
	proto.WriteJSON(w, http.StatusAccepted, proto.PairReplyJSON{State: localapi.PairAsked})
}

// pairRefused answers a request to pair that is refused.
func pairRefused(w http.ResponseWriter, status int, e proto.PeerError, detail string) {
	proto.WriteError(w, status, localapi.ErrorBody{Error: string(e), Detail: detail})
}

// roadFor is the road of a peer at ip: the best local road whose network
// holds it, lan for loopback (two Deltas on one computer) and for an
// address no network of this computer's holds (a routed one).
func roadFor(st netwatch.State, ip netip.Addr) roads.Road {
	ip = ip.Unmap()
	for _, r := range roads.LocalRoads {
		if st.InterfaceFor(r, ip) != "" {
			return r
		}
	}
	return roads.LAN
}

// PairRequests are the requests waiting for a person, newest first.
func (p *Pairing) PairRequests() []localapi.PairRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]localapi.PairRequest, 0, len(p.requests))
	for _, r := range p.requests {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out
}

// Status is GET /v1/pairing.
func (p *Pairing) Status() localapi.Pairing {
	out := localapi.Pairing{Self: p.Self(), Requests: p.PairRequests(), Peers: []localapi.PairedPeer{}}
	for _, sp := range p.router.StaticPeers() {
		out.Peers = append(out.Peers, p.peer(sp))
	}
	return out
}

// peer is sp as GET /v1/pairing shows it.
func (p *Pairing) peer(sp roads.StaticPeer) localapi.PairedPeer {
	pp := localapi.PairedPeer{Name: sp.Name, ID: sp.ID, Roads: map[string]string{}}
	for r, a := range sp.Roads {
		pp.Roads[string(r)] = a
	}
	p.mu.Lock()
	a, ok := p.asked[sp.Name]
	p.mu.Unlock()
	pp.AskedAt = a.at
	switch {
	case p.router.Book().AnyUp(sp.Name):
		pp.State, pp.Detail = localapi.PairPaired, "a road to "+sp.Name+" is up: its door admits this computer"
	case ok && a.state == localapi.PairPaired && p.now().Sub(a.at) < saidFor:
		pp.State, pp.Detail = localapi.PairPaired, sp.Name+" said it has paired this computer too"
	case ok && a.state == localapi.PairPaired:
		pp.State, pp.Detail = localapi.PairWaiting, fmt.Sprintf("%s said at %s it had paired this computer; no road to it is up now (it may have unpaired it, or be away)",
			sp.Name, a.at.Local().Format("15:04"))
	case ok:
		pp.State, pp.Detail = a.state, a.detail
	default:
		pp.State, pp.Detail = localapi.PairWaiting, "no road to "+sp.Name+" has answered since Delta started"
	}
	return pp
}

// Pair is a person's yes here (PUT /v1/pairs/NAME).
func (p *Pairing) Pair(ctx context.Context, name string, w localapi.PairWith) (localapi.PairedPeer, error) {
	sp, err := p.check(name, w)
	if err != nil {
		return localapi.PairedPeer{}, err
	}
	if err := p.add(sp); err != nil {
		return localapi.PairedPeer{}, err
	}
	p.ask(ctx, sp)
	return p.peer(sp), nil
}

// check reads a pairing's words: a name, an ID not this computer's, an
// address with a port, a local road.
func (p *Pairing) check(name string, w localapi.PairWith) (roads.StaticPeer, error) {
	bad := func(format string, a ...any) error {
		return &roads.PairError{Outcome: localapi.BadRequest, Msg: fmt.Sprintf(format, a...)}
	}
	if err := proto.CheckName("peer", name); err != nil {
		return roads.StaticPeer{}, bad("%v", err)
	}
	id, err := identity.Parse(w.ID)
	if err != nil {
		return roads.StaticPeer{}, bad("id: %v", err)
	}
	if id == p.seal.ID {
		return roads.StaticPeer{}, bad("%s is this computer's own ID: a computer is not its own peer", id)
	}
	host, _, err := net.SplitHostPort(w.Address)
	if err != nil {
		return roads.StaticPeer{}, bad("address %q is not HOST:PORT (the other computer's peer API, port 7421 unless it says otherwise): %v", w.Address, err)
	}
	if err := CheckPort(w.Address); err != nil {
		return roads.StaticPeer{}, bad("%v", err)
	}
	road := roads.Road(w.Road)
	switch {
	case road == "":
		road = roads.LAN
		if ip, err := netip.ParseAddr(host); err == nil {
			road = roadFor(p.router.state(), ip)
		}
	case !road.Local():
		return roads.StaticPeer{}, bad("road %q is not lan or thunderbolt (a pinned road of static mode)", w.Road)
	}
	return roads.StaticPeer{Name: name, ID: id.String(), Roads: map[roads.Road]string{road: w.Address}}, nil
}

// add pairs sp here: config.json first (a pairing that is not written is
// not made), then the pins, the roads and discovery. A name paired with
// another ID, or an ID paired under another name, is refused: unpair it
// first.
func (p *Pairing) add(sp roads.StaticPeer) error {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	fc, err := statedir.ReadConfig(p.dir)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(fc.Peers, func(q roads.StaticPeer) bool { return q.Name == sp.Name })
	for _, q := range fc.Peers {
		if q.ID == sp.ID && q.Name != sp.Name {
			return &roads.PairError{Outcome: localapi.Conflict, Msg: fmt.Sprintf("the ID %s is paired already, as %s", sp.ID, q.Name)}
		}
	}
	if i >= 0 && fc.Peers[i].ID != sp.ID {
		return &roads.PairError{Outcome: localapi.Conflict, Msg: fmt.Sprintf("%s is paired already with another ID (%s): unpair it first, or give this computer another name", sp.Name, fc.Peers[i].ID)}
	}
	if i >= 0 {
		for r, a := range sp.Roads {
			fc.Peers[i].Roads[r] = a
		}
		sp = fc.Peers[i]
	} else {
		fc.Peers = append(fc.Peers, sp)
	}
	if err := p.write(fc); err != nil {
		return err
	}
	id, _ := identity.Parse(sp.ID)
	p.seal.set(sp.Name, id)
	p.mu.Lock()
	delete(p.requests, id)
	delete(p.ignored, id)
	p.mu.Unlock()
	p.router.setPeer(sp)
	p.log.Info("pairing: paired here", "peer", sp.Name, "id", sp.ID, "roads", sp.Roads)
	return nil
}

// write writes fc as static mode's config.json.
func (p *Pairing) write(fc *statedir.Config) error {
	fc.Mode = statedir.ModeStatic
	if err := CheckPeers(fc.Peers); err != nil {
		return &roads.PairError{Outcome: localapi.BadRequest, Msg: err.Error()}
	}
	path := filepath.Join(p.dir, statedir.ConfigFile)
	if err := statedir.WriteJSON(path, fc); err != nil {
		return fmt.Errorf("pairing: write %s: %w", path, err)
	}
	return nil
}

// ask asks sp to pair with this computer, within pairAskWait, on each of
// its roads in turn until one answers, and keeps what it said.
func (p *Pairing) ask(ctx context.Context, sp roads.StaticPeer) {
	ctx, cancel := context.WithTimeout(ctx, pairAskWait)
	defer cancel()
	state, err := "", errors.New("it has no road")
	for _, c := range Candidates(sp, p.router.state(), p.seal) {
		if state, err = p.askOn(ctx, c); err == nil {
			break
		}
	}
	a := asked{at: p.now(), state: state}
	switch {
	case err != nil:
		a.state, a.detail = localapi.PairWaiting, fmt.Sprintf("%s could not be asked to pair: %v", sp.Name, err)
	case state == localapi.PairAsked:
		a.detail = "asked: waiting for a person on " + sp.Name + " to accept"
	default:
		a.detail = sp.Name + " has paired this computer too"
		p.router.Kick()
	}
	p.mu.Lock()
	p.asked[sp.Name] = a
	p.mu.Unlock()
	p.log.Info("pairing: asked a peer to pair", "peer", sp.Name, "state", a.state, "detail", a.detail)
}

// askOn sends the request to pair on road c: its answer's state, or why
// there is none.
func (p *Pairing) askOn(ctx context.Context, c roads.Candidate) (string, error) {
	conn, err := c.Dial(ctx)
	if err != nil {
		return "", err
	}
	t, err := p.tickets.Ticket(ctx, c.Peer, false)
	if err != nil {
		conn.Close()
		return "", err
	}
	body, _ := json.Marshal(proto.PairAskJSON{Name: p.Self().Name, Port: p.port})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+c.Peer+proto.PathPair, bytes.NewReader(body))
	if err != nil {
		conn.Close()
		return "", err
	}
	req.Header.Set("Authorization", proto.TicketScheme+t)
	req.Header.Set("Content-Type", "application/json")
	used := false
	tr := &http.Transport{DisableKeepAlives: true, DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
		if used {
			return nil, errors.New("one connection only")
		}
		used = true
		return conn, nil
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		conn.Close()
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var reply proto.PairReplyJSON
	if (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted) && json.Unmarshal(b, &reply) == nil &&
		(reply.State == localapi.PairPaired || reply.State == localapi.PairAsked) {
		return reply.State, nil
	}
	var e localapi.ErrorBody
	if json.Unmarshal(b, &e) == nil && e.Detail != "" {
		return "", errors.New(e.Detail)
	}
	return "", fmt.Errorf("it answered %s", strconv.Itoa(resp.StatusCode))
}

// Answer accepts or ignores the request of id (POST
// /v1/pair-requests/ID/ACTION).
func (p *Pairing) Answer(ctx context.Context, id, action string, a localapi.AcceptPair) (localapi.PairedPeer, error) {
	pid, err := identity.Parse(id)
	if err != nil {
		return localapi.PairedPeer{}, &roads.PairError{Outcome: localapi.BadRequest, Msg: "id: " + err.Error()}
	}
	p.mu.Lock()
	req, ok := p.requests[pid]
	p.mu.Unlock()
	if !ok {
		return localapi.PairedPeer{}, &roads.PairError{Outcome: localapi.NotFound, Msg: "no computer with the ID " + pid.String() + " is asking to pair (GET /v1/pairing lists those that are)"}
	}
	switch action {
	case localapi.PairIgnore:
		p.mu.Lock()
		delete(p.requests, pid)
		if len(p.ignored) >= maxIgnored {
			clear(p.ignored)
		}
		p.ignored[pid] = true
		p.mu.Unlock()
		p.router.Book().Touch()
		p.log.Info("pairing: a person ignored a request to pair", "id", pid.String(), "name", req.Name)
		return localapi.PairedPeer{Name: req.Name, ID: req.ID, State: "ignored", Detail: "ignored: its requests are not shown again until Delta restarts"}, nil
	case localapi.PairAccept:
	default:
		return localapi.PairedPeer{}, &roads.PairError{Outcome: localapi.BadRequest, Msg: fmt.Sprintf("%q is not %s or %s", action, localapi.PairAccept, localapi.PairIgnore)}
	}
	name := a.Name
	if name == "" {
		name = req.Name
	}
	pp, err := p.Pair(ctx, name, localapi.PairWith{ID: req.ID, Address: req.Address, Road: req.Road})
	if err != nil {
		return pp, err
	}
	p.router.Book().Touch()
	return pp, nil
}

// Unpair forgets peer name (DELETE /v1/pairs/NAME): config.json first,
// then its pins and roads. Its door admits it no more.
func (p *Pairing) Unpair(name string) error {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	fc, err := statedir.ReadConfig(p.dir)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(fc.Peers, func(q roads.StaticPeer) bool { return q.Name == name })
	if i < 0 {
		return &roads.PairError{Outcome: localapi.NotFound, Msg: name + " is not paired with this computer"}
	}
	fc.Peers = slices.Delete(fc.Peers, i, i+1)
	if err := p.write(fc); err != nil {
		return err
	}
	p.seal.remove(name)
	p.router.removePeer(name)
	p.mu.Lock()
	delete(p.asked, name)
	p.mu.Unlock()
	p.log.Info("pairing: unpaired", "peer", name)
	return nil
}

// Self is this computer as pairing names it now.
func (p *Pairing) Self() localapi.Self {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.self
}

// Rename gives this computer a new name (PUT /v1/name): config.json
// first, then what it says of itself (its status, its announcements, the
// requests to pair it sends). Its peers know it by the names they chose,
// which do not change; a ticket already minted names it as before until it
// is renewed (a door with IDs reads the name it paired, never a ticket's).
func (p *Pairing) Rename(name string) (localapi.Self, error) {
	if err := proto.CheckName("computer", name); err != nil {
		return localapi.Self{}, &roads.PairError{Outcome: localapi.BadRequest, Msg: err.Error()}
	}
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	fc, err := statedir.ReadConfig(p.dir)
	if err != nil {
		return localapi.Self{}, err
	}
	fc.Name = name
	if err := p.write(fc); err != nil {
		return localapi.Self{}, err
	}
	p.mu.Lock()
	old := p.self.Name
	p.self.Name = name
	self := p.self
	p.mu.Unlock()
	if d := p.router.Discovery(); d != nil {
		d.SetName(name)
	}
	p.router.Book().Touch()
	p.log.Info("this computer renamed", "from", old, "to", name)
	return self, nil
}
