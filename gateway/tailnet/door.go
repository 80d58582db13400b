package tailnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/pintls"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/ticket"
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

func (d whoisDoor) Identify(r *http.Request) (gateway.Caller, error) {
	n := d.n
	who, err := n.lc.WhoIs(r.Context(), r.RemoteAddr)
	if err != nil {
		return gateway.Caller{}, fmt.Errorf("cannot tell who %s is on the tailnet: %w", r.RemoteAddr, err)
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
		return gateway.Caller{}, fmt.Errorf("tailnet node %s (%s, %s) is not one of this user's computers and not in the allow-list", name, node.StableID, what)
	}
	return gateway.Caller{Node: string(node.StableID), Name: name}, nil
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

func (d ticketDoor) Identify(r *http.Request) (gateway.Caller, error) {
	n := d.n
	t, ok := proto.TicketFrom(r.Header.Get("Authorization"))
	if !ok {
		return gateway.Caller{}, fmt.Errorf("%w: the request has no \"Authorization: Delta <ticket>\" header", gateway.ErrDoorUnauthorized)
	}
	c, err := n.checked.Check(n.key, t, time.Now())
	if err != nil {
		return gateway.Caller{}, fmt.Errorf("%w: %w", gateway.ErrDoorUnauthorized, err)
	}
	if got := pintls.ClientPin(r.TLS); c.Pin == "" || got != c.Pin {
		return gateway.Caller{}, fmt.Errorf("%w: the ticket was minted for node %s's certificate, not for the one presented", gateway.ErrDoorUnauthorized, c.Node)
	}
	n.mu.Lock()
	_, inMap := n.byNode[tailcfg.StableNodeID(c.Node)]
	n.mu.Unlock()
	if !inMap {
		return gateway.Caller{}, fmt.Errorf("node %s (%s) is no longer one of this tailnet's allowed computers", c.Name, c.Node)
	}
	return gateway.Caller{Node: c.Node, Name: c.Name}, nil
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
	for _, l := range n.lanLns {
		h.Roads = append(h.Roads, HelloRoad{Road: l.road, Address: l.ln.Addr().String(), Interface: l.iface, MAC: n.helloMACLocked(l)})
	}
	return h
}

func (n *Node) handleHello(w http.ResponseWriter, r *http.Request) {
	proto.WritePeerJSON(w, http.StatusOK, n.hello())
}

var pinRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

type ticketRequest struct {
	Pin string `json:"pin"` // the caller's client certificate pin
}

type ticketResponse struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (n *Node) handleTicket(w http.ResponseWriter, r *http.Request) {
	caller := gateway.CallerFrom(r)
	var req ticketRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || !pinRe.MatchString(req.Pin) {
		proto.WriteError(w, http.StatusBadRequest, proto.ErrorBody{Error: string(proto.PeerBadRequest), Detail: `the body must be {"pin": "<64 hex digits: the SHA-256 of your TLS client certificate>"}`})
		return
	}
	exp := time.Now().Add(ticket.Lifetime)
	t := n.key.Mint(ticket.Claims{Node: caller.Node, Name: caller.Name, Expires: exp, Pin: req.Pin})
	proto.WritePeerJSON(w, http.StatusOK, ticketResponse{Ticket: t, ExpiresAt: exp})
}

// renewAhead is how long before expiry a held ticket is renewed.
const renewAhead = 2 * time.Minute

// Ticket implements gateway.Tickets: it fetches a ticket from the peer over
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
	n.mu.Lock()
	addr := p.tsAddr
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(metered(ctx, &n.upkeep.ticket), helloTimeout)
	defer cancel()
	body, _ := json.Marshal(ticketRequest{Pin: n.pin})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+proto.PathTickets, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.httc.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking %s for a ticket over the tailnet: %w", peer, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s refused a ticket: %d %s", peer, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var tr ticketResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.Ticket == "" {
		return "", errors.New(peer + "'s ticket answer is not JSON with a ticket")
	}
	n.mu.Lock()
	n.tickets[peer] = heldTicket{t: tr.Ticket, exp: tr.ExpiresAt}
	n.mu.Unlock()
	return tr.Ticket, nil
}

func (n *Node) dropTicket(peer string) {
	n.mu.Lock()
	delete(n.tickets, peer)
	n.mu.Unlock()
}
