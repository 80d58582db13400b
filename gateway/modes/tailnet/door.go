package tailnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/carry/owner"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/net/ticket"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/direct"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// allowedLocked reports whether a tailnet node may use the peer API: the
// same user's own (untagged) computers, or anything in the allow-list.
func (n *Node) allowedLocked(user tailcfg.UserID, tags []string, login string, id tailcfg.StableNodeID) bool {
	if len(tags) == 0 && n.selfUser != 0 && user == n.selfUser {
		return true
	}
	for _, a := range n.cfg.Allow {
		if a == login || a == string(id) || slices.Contains(tags, a) {
			return true
		}
	}
	return false
}

// whoisDoor admits tailnet callers by WhoIs.
type whoisDoor struct{ n *Node }

func (d whoisDoor) Identify(r *http.Request) (owner.Visitor, error) {
	n := d.n
	who, err := n.lc.WhoIs(r.Context(), r.RemoteAddr)
	if err != nil {
		return owner.Visitor{}, fmt.Errorf("cannot tell who %s is on the tailnet: %w", r.RemoteAddr, err)
	}
	node := who.Node
	login := ""
	if who.UserProfile != nil {
		login = who.UserProfile.LoginName
	}
	n.mu.Lock()
	ok := n.allowedLocked(node.User, node.Tags, login, node.StableID)
	n.mu.Unlock()
	name := hostName(node)
	if !ok {
		what := "user " + login
		if len(node.Tags) > 0 {
			what = "tagged " + strings.Join(node.Tags, ",")
		}
		return owner.Visitor{}, fmt.Errorf("tailnet node %s (%s, %s) is not one of this user's computers and not in the allow-list", name, node.StableID, what)
	}
	n.peerUpkeep(r, string(node.StableID))
	return owner.Visitor{Node: string(node.StableID), Name: name}, nil
}

func hostName(node *tailcfg.Node) string {
	if node.Hostinfo.Valid() && node.Hostinfo.Hostname() != "" {
		return strings.ToLower(node.Hostinfo.Hostname())
	}
	name, _, _ := strings.Cut(node.ComputedName, ".")
	if name == "" {
		name, _, _ = strings.Cut(node.Name, ".")
	}
	return name
}

// ticketDoor admits callers on the TLS listener by a ticket this computer
// minted, presented with the client certificate it is bound to, for a node
// still in the tailnet's network map.
type ticketDoor struct{ n *Node }

func (d ticketDoor) Identify(r *http.Request) (owner.Visitor, error) {
	n := d.n
	t, ok := proto.TicketFrom(r.Header.Get("Authorization"))
	if !ok {
		return owner.Visitor{}, fmt.Errorf("%w: the request has no \"Authorization: Delta <ticket>\" header", owner.ErrDoorUnauthorized)
	}
	c, err := n.checked.Check(n.key, t, time.Now())
	if err != nil {
		return owner.Visitor{}, fmt.Errorf("%w: %w", owner.ErrDoorUnauthorized, err)
	}
	if got := pintls.ClientPin(r.TLS); c.Pin == "" || got != c.Pin {
		return owner.Visitor{}, fmt.Errorf("%w: the ticket was minted for node %s's certificate, not for the one presented", owner.ErrDoorUnauthorized, c.Node)
	}
	n.mu.Lock()
	_, inMap := n.byNode[tailcfg.StableNodeID(c.Node)]
	n.mu.Unlock()
	if !inMap {
		return owner.Visitor{}, fmt.Errorf("node %s (%s) is no longer one of this tailnet's allowed computers", c.Name, c.Node)
	}
	return owner.Visitor{Node: c.Node, Name: c.Name, ReadOnly: c.ReadOnly()}, nil
}

// routes adds hello and tickets to the tailnet listener.
func (n *Node) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+proto.PathHello, n.handleHello)
	mux.HandleFunc("POST "+proto.PathTickets, n.handleTicket)
}

func (n *Node) hello() Hello {
	h := Hello{Name: n.cfg.Hostname, Version: n.cfg.Version, NodeID: n.Self().Node, Pin: n.pin, Roads: []HelloRoad{}}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.lan.All() {
		h.Roads = append(h.Roads, HelloRoad{Road: l.Road, Address: l.Addr().String(), Interface: l.Interface, MAC: n.helloMACLocked(l)})
	}
	return h
}

func (n *Node) handleHello(w http.ResponseWriter, r *http.Request) {
	proto.WritePeerJSON(w, http.StatusOK, n.hello())
}

var pinRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

type ticketRequest struct {
	Pin string `json:"pin"` // the caller's client certificate pin
	// Scope is "" for a ticket, ticket.ScopeRead for a read ticket.
	Scope string `json:"scope,omitempty"`
}

type ticketResponse struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (n *Node) handleTicket(w http.ResponseWriter, r *http.Request) {
	caller := owner.VisitorFrom(r)
	var req ticketRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || !pinRe.MatchString(req.Pin) || req.Scope != "" && req.Scope != ticket.ScopeRead {
		proto.WriteError(w, http.StatusBadRequest, localapi.ErrorBody{Error: string(proto.PeerBadRequest), Detail: `the body must be {"pin": "<64 hex digits: the SHA-256 of your TLS client certificate>"}, with "scope": "read" for a read ticket`})
		return
	}
	exp := time.Now().Add(ticket.Lifetime)
	t := n.key.Mint(ticket.Claims{Node: caller.Node, Name: caller.Name, Expires: exp, Pin: req.Pin, Scope: req.Scope})
	proto.WritePeerJSON(w, http.StatusOK, ticketResponse{Ticket: t, ExpiresAt: exp})
}

// renewAhead is how long before expiry a held ticket is renewed.
const renewAhead = 2 * time.Minute

// Ticket implements peerclient.Tickets: it fetches a ticket from the peer over
// the tailnet (bound to this computer's certificate) and holds it until
// two minutes before it expires. renew forces a new one.
func (n *Node) Ticket(ctx context.Context, peer string, renew bool) (string, error) {
	n.mu.Lock()
	held, ok := n.tickets[peer]
	p := n.peers[peer]
	n.mu.Unlock()
	if ok && !renew && time.Until(held.exp) > renewAhead {
		return held.t, nil
	}
	if p == nil {
		return "", fmt.Errorf("%s is not a known peer", peer)
	}
	tr, err := n.askTicket(ctx, peer, p, "")
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	n.tickets[peer] = heldTicket{t: tr.Ticket, exp: tr.ExpiresAt}
	n.mu.Unlock()
	return tr.Ticket, nil
}

// DirectRoads are the peers' thunderbolt and lan roads from their hellos,
// each with the local interface that reaches it and the pinned
// certificate, and this computer's certificate files, to which read
// tickets are bound (gateway.DirectReads).
func (n *Node) DirectRoads() ([]localapi.DirectPeer, string, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []localapi.DirectPeer
	for name, p := range n.peers {
		if p.hello == nil {
			continue
		}
		dp := localapi.DirectPeer{Name: name}
		for _, want := range roads.LocalRoads {
			for _, hr := range p.hello.Roads {
				ap, err := netip.ParseAddrPort(hr.Address)
				if hr.Road != want || err != nil {
					continue
				}
				if iface, ok := localRoad(n.ifaces, hr.Road, ap.Addr()); ok {
					dp.Roads = append(dp.Roads, localapi.DirectRoad{Road: string(hr.Road), Address: hr.Address, Interface: iface, Pin: p.hello.Pin})
				}
			}
		}
		out = append(out, dp)
	}
	slices.SortFunc(out, func(a, b localapi.DirectPeer) int { return strings.Compare(a.Name, b.Name) })
	return out, pintls.CertFile, pintls.KeyFile
}

// ReadTicket returns a read ticket from peer, bound to this computer's
// certificate (gateway.DirectReads): the kit reads with it around a down
// Delta. One held with more than direct.Renew to live is returned as it
// is; otherwise a new one is fetched over the tailnet.
func (n *Node) ReadTicket(ctx context.Context, peer string) (string, time.Time, error) {
	n.mu.Lock()
	p := n.peers[peer]
	n.mu.Unlock()
	if p == nil {
		return "", time.Time{}, fmt.Errorf("%s is not a known peer", peer)
	}
	n.mu.Lock()
	held, ok := n.readTickets[peer]
	n.mu.Unlock()
	if ok && time.Until(held.exp) > direct.Renew {
		return held.t, held.exp, nil // renewed by a round (rideAlong)
	}
	return n.fetchReadTicket(ctx, peer, p)
}

// fetchReadTicket asks peer for a read ticket and holds it, for ReadTicket
// and the rounds that renew it.
func (n *Node) fetchReadTicket(ctx context.Context, peer string, p *peer) (string, time.Time, error) {
	tr, err := n.askTicket(ctx, peer, p, ticket.ScopeRead)
	if err != nil {
		return "", time.Time{}, err
	}
	n.mu.Lock()
	n.readTickets[peer] = heldTicket{t: tr.Ticket, exp: tr.ExpiresAt}
	n.mu.Unlock()
	return tr.Ticket, tr.ExpiresAt, nil
}

// askTicket asks peer over the tailnet for a ticket of scope.
func (n *Node) askTicket(ctx context.Context, peer string, p *peer, scope string) (ticketResponse, error) {
	n.mu.Lock()
	addr := p.tsAddr
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(metered(ctx, &n.upkeep.ticket), helloTimeout)
	defer cancel()
	body, _ := json.Marshal(ticketRequest{Pin: n.pin, Scope: scope})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+proto.PathTickets, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.httc.Do(req)
	if err != nil {
		return ticketResponse{}, fmt.Errorf("asking %s for a ticket over the tailnet: %w", peer, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode != http.StatusOK {
		return ticketResponse{}, fmt.Errorf("%s refused a ticket: %d %s", peer, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var tr ticketResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.Ticket == "" {
		return ticketResponse{}, errors.New(peer + "'s ticket answer is not JSON with a ticket")
	}
	return tr, nil
}

var _ gateway.DirectReads = (*Node)(nil)
