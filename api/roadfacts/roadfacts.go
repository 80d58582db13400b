// Package roadfacts is what Delta knows of each kind of road, as data: one
// table row a road (its rank, connect timeout, hold-down, belief lifetime,
// and whether it is local: thunderbolt and lan, dropped and replaced by a
// freshly chosen road when it fails), how a connection is bound to a
// road's interface on each OS (BindControl), and the check of a pinned
// certificate (VerifyPin). It imports only the standard library, so that
// the kits' direct reads use the same facts as Delta itself rather than
// copies of them. A new kind of road is a row of facts, a line of netwatch's
// classification, and docs.
package roadfacts

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Road is one kind of way to a peer.
type Road string

// The roads, best first.
const (
	Thunderbolt Road = "thunderbolt"
	LAN         Road = "lan"
	Tailnet     Road = "tailnet"
)

// Facts are one road's constants (DESIGN §8).
type Facts struct {
	// Rank orders roads: lower is preferred.
	Rank int
	// ConnectTimeout is how long a connect on the road may take (a
	// pooled connection that goes silent fails after as long: BindControl).
	ConnectTimeout time.Duration
	// HoldDown is how long an address on the road is not dialled again
	// after a connect timeout.
	HoldDown time.Duration
	// Local: a road of this computer's own networks (a cable, the lan),
	// bound to its interface, dropped and replaced by a freshly chosen
	// road when it fails; what direct reads and local discovery use.
	Local bool
	// BeliefLifetime is how long a road that answered (a probe or a use)
	// is believed up before it is probed again. The tailnet's is longer:
	// between probes the tailnet's own map says whether the peer is
	// online (the route book follows it as it changes), and every probe
	// keeps the tailnet's session to the peer busy, pinging it every 3 s,
	// for 45 s after (docs/protocol.md §4, "The tailnet road's belief").
	BeliefLifetime time.Duration
}

// table is every road's facts, best first.
var table = []struct {
	road Road
	Facts
}{
	{Thunderbolt, Facts{Rank: 0, ConnectTimeout: 2 * time.Second, HoldDown: 4 * time.Second, Local: true, BeliefLifetime: 30 * time.Second}},
	{LAN, Facts{Rank: 1, ConnectTimeout: 3 * time.Second, HoldDown: 5 * time.Second, Local: true, BeliefLifetime: 30 * time.Second}},
	{Tailnet, Facts{Rank: 2, ConnectTimeout: 8 * time.Second, HoldDown: 10 * time.Second, BeliefLifetime: 5 * time.Minute}},
}

// KeepAlive is the TCP keepalive of every connection between two Deltas
// on a lan or thunderbolt road, at both ends (the dial and the TLS
// listener): a connection whose road died while its interface stayed up
// (a cable pulled at the far end, a peer that lost power or slept) fails
// once it has carried nothing for Idle and Count probes went unanswered,
// one every Interval: within 11 s (DESIGN §2c), where an answer that is
// only quiet (a long-poll, an event stream) lives on, its road answering
// the probes. Go sets it alike on Linux (TCP_KEEPIDLE, TCP_KEEPINTVL,
// TCP_KEEPCNT) and macOS (TCP_KEEPALIVE, TCP_KEEPINTVL, TCP_KEEPCNT). On
// Linux a connection bound to its interface also has TCP_USER_TIMEOUT set
// to the road's connect timeout (BindControl), which ends it at the first
// probe unanswered past that: within Idle + Interval, 7 s.
var KeepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}

// All lists the roads in order of preference.
var All = func() []Road {
	out := make([]Road, len(table))
	for i, r := range table {
		out[i] = r.road
	}
	return out
}()

// LocalRoads lists the local roads (Facts.Local), best first.
var LocalRoads = func() []Road {
	var out []Road
	for _, r := range table {
		if r.Local {
			out = append(out, r.road)
		}
	}
	return out
}()

// Of returns r's facts; a road that is not one of All has the worst
// rank and the tailnet's timeouts, and is not local.
func Of(r Road) Facts {
	for _, row := range table {
		if row.road == r {
			return row.Facts
		}
	}
	last := table[len(table)-1].Facts
	return Facts{Rank: last.Rank, ConnectTimeout: last.ConnectTimeout, HoldDown: last.HoldDown, BeliefLifetime: table[0].BeliefLifetime}
}

// Rank orders roads: lower is preferred.
func (r Road) Rank() int { return Of(r).Rank }

// ConnectTimeout is how long a connect on r may take.
func (r Road) ConnectTimeout() time.Duration { return Of(r).ConnectTimeout }

// HoldDown is how long an address on r is not dialled again after a
// connect timeout.
func (r Road) HoldDown() time.Duration { return Of(r).HoldDown }

// BeliefLifetime is how long r is believed up after it answered.
func (r Road) BeliefLifetime() time.Duration { return Of(r).BeliefLifetime }

// Local reports whether r is a local road (Facts.Local).
func (r Road) Local() bool { return Of(r).Local }

// Known reports whether r is one of All.
func (r Road) Known() bool {
	for _, row := range table {
		if row.road == r {
			return true
		}
	}
	return false
}

// Names lists roads for a message, all of them when none are given:
// "thunderbolt, lan, tailnet".
func Names(rs ...Road) string {
	if len(rs) == 0 {
		rs = All
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Parse checks a road's name, as X-Delta-Route and config.json spell it.
func Parse(s string) (Road, error) {
	if r := Road(s); r.Known() {
		return r, nil
	}
	return "", fmt.Errorf("road %q is not one of %s", s, Names())
}

// Pin is the hex SHA-256 of a certificate's DER: what a pinned road
// checks the certificate it is shown against.
func Pin(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// MismatchError is a handshake refused because the peer's certificate is
// not the pinned one. Nothing was sent.
type MismatchError struct {
	Addr string
	Want string // the pin learned (over the tailnet, or by pairing)
	Got  string // the pin of the certificate presented
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the certificate at %s has fingerprint %s, not the pinned %s", e.Addr, e.Got, e.Want)
}

// VerifyPin is a tls.Config.VerifyConnection that accepts only the
// certificate whose Pin is want (Delta's certificates are self-signed:
// the pin is the whole trust). A wrong one is a *MismatchError naming
// addr.
func VerifyPin(addr, want string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the peer presented no certificate")
		}
		if got := Pin(cs.PeerCertificates[0].Raw); got != want {
			return &MismatchError{Addr: addr, Want: want, Got: got}
		}
		return nil
	}
}
