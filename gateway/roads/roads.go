// Package roads names the ways between two computers (thunderbolt, lan,
// tailnet), their constants (DESIGN §8), and the seam through which the
// gateway asks for one: a Router chooses a Candidate for a peer, and is
// told when a road failed.
//
// One road keeper (routes.Router, over the route book) serves both modes:
// static mode embeds it and the tailnet node delegates to it. The optional
// extras a router may offer are named interfaces here too.
package roads

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
)

// Road is one kind of way to a peer; its facts (rank, timeouts, hold-down,
// local or not) are roadfacts' table.
type Road = roadfacts.Road

// The roads, best first.
const (
	Thunderbolt = roadfacts.Thunderbolt
	LAN         = roadfacts.LAN
	Tailnet     = roadfacts.Tailnet
)

// All lists the roads in order of preference; LocalRoads the local ones
// (thunderbolt, lan: bound to an interface, dropped when they fail).
var (
	All        = roadfacts.All
	LocalRoads = roadfacts.LocalRoads
)

// Parse checks a road's name, as X-Delta-Route, config.json and the
// command line spell it (roadfacts.Parse).
func Parse(s string) (Road, error) { return roadfacts.Parse(s) }

// Stagger is how long the best road may take to connect before the next
// one is started as well, in a race across roads (RFC 8305's connection
// attempt delay).
const Stagger = 150 * time.Millisecond

// Choice is the road to try first and, unpinned, the roads to race after
// the stagger, best first: what a route book chose for one exchange.
type Choice struct {
	First Candidate
	Next  []Candidate
	// Passed are the roads skipped as held down, offline or believed down
	// (unpinned choices); At is when the choice was made.
	Passed []Road
	At     time.Time
}

// Candidate is one way to reach one peer.
type Candidate struct {
	Peer      string
	Road      Road
	Address   string // host:port
	Interface string // the interface the road is bound to; empty if none
	// Dial connects, and completes any handshake, so that the first byte
	// written to the connection is the request's.
	Dial func(ctx context.Context) (net.Conn, error)
	// NeedsTicket reports whether requests on this road carry
	// `Authorization: Delta <ticket>` (the peer cannot see who calls:
	// lan and thunderbolt). On the tailnet the peer asks WhoIs instead.
	NeedsTicket bool
	// Next are the roads to race after a stagger if this one has not
	// connected by then, best first (unpinned choices only). Empty: dial
	// this road alone.
	Next []Candidate
	// Passed are the peer's roads an unpinned choice passed over as held
	// down, offline or believed down, and ChosenAt is when it was made
	// (by the router's clock). A read's or a call's fall-back does not
	// take a passed road unless it has answered since (peerclient.Do): its
	// failure is a verdict this exchange has already accepted, even if
	// its hold-down ends while the exchange waits on the other roads.
	Passed   []Road
	ChosenAt time.Time
}

// String names the candidate the way details do: "studio via lan (192.168.1.20:7422 on en0)".
func (c Candidate) String() string {
	where := c.Address
	if c.Interface != "" {
		where += " on " + c.Interface
	}
	return fmt.Sprintf("%s via %s (%s)", c.Peer, c.Road, where)
}

// Errors from Choose.
var (
	ErrUnknownPeer = errors.New("unknown peer")
	ErrNoRoad      = errors.New("no road")
	// ErrHeldDown marks a road refused during its hold-down after a
	// connect timeout; its error's text says so in DESIGN §3's words.
	ErrHeldDown = errors.New("held down")
	// ErrOffline marks a road refused because the tailnet says the peer
	// is offline; its error's text says since when.
	ErrOffline = errors.New("offline")
	// ErrLocalNetwork marks a failed lan or thunderbolt connect that
	// macOS's Local Network privacy likely refused
	// (netwatch.LocalNetworkBlocked); its text says what to do.
	ErrLocalNetwork = errors.New("macOS may be blocking Local Network access for Delta: allow it in System Settings › Privacy & Security › Local Network")
)

// Evidence is what proves a road dead (DESIGN §2c): only these drop a
// road. An app that answers late, breaks its answer or is cancelled by its
// client, and an answer that is quiet, are never evidence.
type Evidence string

// The kinds of evidence.
const (
	// EvidenceConnect: a connect or TLS handshake (with its pin check) on
	// the road failed.
	EvidenceConnect Evidence = "connect"
	// EvidenceNetwatch: netwatch saw the road's interface go down, lose
	// its address or vanish.
	EvidenceNetwatch Evidence = "netwatch"
	// EvidenceProbe: the road's probe (a ping to the peer's Delta) failed.
	EvidenceProbe Evidence = "probe"
	// EvidenceClosed: the peer's Delta closed or reset a connection when
	// no app caused it (before an answer's head, when the owner answers
	// every failure of its app itself).
	EvidenceClosed Evidence = "closed"
	// EvidenceKeepalive: TCP keepalive found a connection on the road dead
	// (its probes went unanswered).
	EvidenceKeepalive Evidence = "keepalive"
)

// Words are the evidence as a person reads it in the log, delta status,
// the menu and the page.
func (e Evidence) Words() string {
	switch e {
	case EvidenceConnect:
		return "a connect failed"
	case EvidenceNetwatch:
		return "its interface went"
	case EvidenceProbe:
		return "its probe failed"
	case EvidenceClosed:
		return "the peer's Delta closed a connection that no app had ended"
	case EvidenceKeepalive:
		return "TCP keepalive found a connection dead"
	}
	return string(e)
}

// DropError is why a road was dropped: the evidence and the failure that
// showed it.
type DropError struct {
	Evidence Evidence
	Err      error
}

func (e *DropError) Error() string { return e.Evidence.Words() + ": " + e.Err.Error() }
func (e *DropError) Unwrap() error { return e.Err }

// AsDrop is err as the reason a road was dropped: err itself when it
// carries a *DropError already, else err with the evidence it carries
// (EvidenceOf), so that what is logged and shown names its evidence.
func AsDrop(err error) error {
	if d := (*DropError)(nil); errors.As(err, &d) {
		return err
	}
	return &DropError{Evidence: EvidenceOf(err), Err: err}
}

// EvidenceOf is the evidence err carries (a *DropError, an interface
// lost), or EvidenceConnect: a road's failure told without its evidence
// is a failed connect (Router.Report's).
func EvidenceOf(err error) Evidence {
	var d *DropError
	var lost *InterfaceLostError
	switch {
	case errors.As(err, &d):
		return d.Evidence
	case errors.As(err, &lost):
		return EvidenceNetwatch
	}
	return EvidenceConnect
}

// InterfaceLostError drops the roads over a local interface that went
// down, lost its address or vanished.
type InterfaceLostError struct{ Interface string }

func (e *InterfaceLostError) Error() string {
	return fmt.Sprintf("interface %s went down or lost its address", e.Interface)
}

// HintOf names the known cause behind a road's failure err, for a person:
// localapi.HintLocalNetwork for ErrLocalNetwork, "" for none.
func HintOf(err error) localapi.RoadHint {
	if errors.Is(err, ErrLocalNetwork) {
		return localapi.HintLocalNetwork
	}
	return ""
}

// StaticPeer is a peer named in the state folder's config, with an address
// per road.
type StaticPeer struct {
	Name string `json:"name"`
	// ID is the peer's identity (package identity's spelling): its roads
	// are TLS pinned to it, and what it says it is must match it. Empty in
	// a config of the network-key kind, whose roads are plain TCP.
	ID    string          `json:"id,omitempty"`
	Roads map[Road]string `json:"roads"` // road → host:port
}

// NearbyReporter is a Router that hears Deltas on the local network whose
// IDs are not paired (static mode's local discovery).
type NearbyReporter interface {
	Nearby() []localapi.Nearby
}

// Pairer is a Router whose peers a person pairs and unpairs while Delta
// runs (static mode with IDs): nothing is paired until a person on each
// side has said yes. The local API's pairing paths and the status's
// PairRequests are its.
type Pairer interface {
	Pairing() localapi.Pairing
	PairRequests() []localapi.PairRequest
	// Pair is a person's yes here to the computer of w.ID, named name
	// here; the peer is asked at once, and the answer says what it said.
	Pair(ctx context.Context, name string, w localapi.PairWith) (localapi.PairedPeer, error)
	// Unpair forgets peer name: its door admits it no more.
	Unpair(name string) error
	// Rename gives this computer a new name.
	Rename(name string) (localapi.Self, error)
	// AnswerPairRequest accepts (localapi.PairAccept) or ignores
	// (localapi.PairIgnore) the request of the computer id.
	AnswerPairRequest(ctx context.Context, id, action string, a localapi.AcceptPair) (localapi.PairedPeer, error)
}

// PairError is a pairing refused, with the local API's outcome for it.
type PairError struct {
	Outcome localapi.Outcome
	Msg     string
}

func (e *PairError) Error() string { return e.Msg }

// Answerer is a Router that can say whether a road has answered since a
// moment (by its own clock, as in Candidate.ChosenAt).
type Answerer interface {
	AnsweredSince(peer string, road Road, t time.Time) bool
}

// Unmeasured is the round trip reported for a use that shows the road
// works but measured no round trip of it (an answer's head came; the
// app's own time is in it).
const Unmeasured time.Duration = -1

// Router chooses roads.
type Router interface {
	// Known reports whether peer is one of this computer's peers.
	Known(peer string) bool
	// Choose returns the best usable candidate for peer. If pin is not
	// empty, only that road is considered; roads in exclude are skipped.
	// Errors wrap ErrUnknownPeer or ErrNoRoad.
	Choose(ctx context.Context, peer string, pin Road, exclude ...Road) (Candidate, error)
	// Report tells the router how a connect (or a probe) on c went: err
	// nil for success (with the time it took), or its failure, which is
	// evidence of its own (EvidenceOf: a failed connect unless it says
	// otherwise). Nothing else is reported as a failure: a road is never
	// held to account for an app or a client (DESIGN §2c).
	Report(c Candidate, rtt time.Duration, err error)
	// Invalidate drops peer's road on evidence (reason: a *DropError, or
	// an InterfaceLostError), and tells whoever follows its events
	// (RoadLost) so that every exchange on it is cut.
	Invalidate(peer string, road Road, reason error)
	// Peers describes every known peer and its roads, for status.
	Peers() []localapi.PeerStatus
}

// NotYetError refuses a peer that this computer knows (it was a peer when
// Delta last ran) but has no road to yet: Delta started moments ago and is
// finding its roads, or has not found the peer since. Nothing was sent. It
// wraps ErrNoRoad.
type NotYetError struct {
	Peer    string
	Started time.Time // when this Delta started
	Now     time.Time
}

func (e *NotYetError) Error() string {
	ago := e.Now.Sub(e.Started)
	if ago < time.Minute {
		return fmt.Sprintf("no road to %s yet (Delta started %s ago and is finding its roads)", e.Peer, FormatAgo(ago))
	}
	return fmt.Sprintf("no road to %s yet (Delta started %s ago and has not found it on the tailnet since; it may be off or asleep)", e.Peer, FormatAgo(ago))
}

func (e *NotYetError) Unwrap() error { return ErrNoRoad }

// FormatAgo says a duration the way details do: "40 ms", "2.5 s", "3 min".
func FormatAgo(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// RaceCounter is a Router that counts the races a road won (the route
// book's counters).
type RaceCounter interface {
	Won(road Road)
}

// RaceLoser is a Router told of a better road whose connect was still
// under way when a worse one won the race: it is not chosen first again
// until it has proved itself (a connect or a probe that answers), so that
// a silent road does not cost every exchange the stagger again while its
// connect runs to its timeout.
type RaceLoser interface {
	LostRace(c Candidate)
}

// Suspecter is a Router asked to look at a road at once, without
// dropping it: an exchange on it has been quiet a long time, or an answer
// on it broke off in a way that proves nothing by itself. Only the probe's
// failure drops the road.
type Suspecter interface {
	Suspect(peer string, road Road, why string)
}

// Kinds of upkeep traffic.
const (
	UpkeepProbe  = "probe"
	UpkeepHello  = "hello"
	UpkeepTicket = "ticket"
)

// Counted is a Router that keeps a route book's counters.
type Counted interface {
	RouteCounters() localapi.RouteCounters
}

// EventKind is what happened to the roads to a peer.
type EventKind int

const (
	// InterfaceLost: a local interface went down, lost its address or
	// vanished: every connection bound to it is closed at once, and the
	// idle pooled connections of Peers, whose roads went over it.
	InterfaceLost EventKind = iota
	// RoadUp: a better road to Peer answered (or the first one): its idle
	// pooled connections are closed so the next read takes it, and its
	// unknown calls are asked about at once.
	RoadUp
	// RoadLost: Peer's Road was dropped on evidence (Why): every
	// connection on it is closed at once, busy ones too, so that every
	// exchange on it ends now and its app is told.
	RoadLost
)

// Event is one thing that happened to the roads, for the gateway to act on.
type Event struct {
	Kind      EventKind
	Interface string   // InterfaceLost
	Peers     []string // InterfaceLost: the peers with a road over it
	Peer      string   // RoadUp, RoadLost
	Road      Road     // RoadLost
	Why       error    // RoadLost: a *DropError
}

// EventSource is a Router that tells what happened to the roads (the
// tailnet node, the static router). Knowledge flows one way: it never calls
// the gateway.
type EventSource interface {
	Events() <-chan Event
}

// Prober is a Router that looks at its roads by itself while Delta runs
// (the static router, which has no network map to tell it a peer is back).
// The gateway runs Probe until ctx ends.
type Prober interface {
	Probe(ctx context.Context)
}

// UnknownPeer says that peer is not one of this computer's peers, naming
// them (known) and the one a typo most likely meant: the nearest, at most
// two edits away.
func UnknownPeer(peer string, known []string) string {
	msg := fmt.Sprintf("%q is not one of this computer's peers", peer)
	if len(known) == 0 {
		return msg + " (it has none yet)"
	}
	names := slices.Sorted(slices.Values(known))
	best, bestD := "", 3
	for _, k := range names {
		d := EditDistance(strings.ToLower(peer), strings.ToLower(k))
		if d < bestD {
			best, bestD = k, d
		}
	}
	msg += " (its peers: " + strings.Join(names, ", ")
	if best != "" {
		msg += "; did you mean " + best + "?"
	}
	return msg + ")"
}

// PeerNames are the names of r's peers.
func PeerNames(r Router) []string {
	var out []string
	for _, p := range r.Peers() {
		out = append(out, p.Name)
	}
	return out
}

// EditDistance is Levenshtein's distance between a and b, in bytes: the
// "did you mean" of a peer's name here, and of a flag's on the command line.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
