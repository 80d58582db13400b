// Package loopnet runs a whole tailnet on this computer's loopback:
// Tailscale's test control server and a DERP relay, in-process. Nothing it
// starts reaches past loopback. `delta demo` runs on it, and the tests'
// tailnettest wraps it.
package loopnet

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"tailscale.com/derp/derpserver"
	"tailscale.com/net/netns"
	"tailscale.com/net/stun"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
	"tailscale.com/types/logger"
)

// Net is a running loopback tailnet.
type Net struct {
	// URL is the control server's.
	URL    string
	Server *testcontrol.Server

	derp    *derpserver.Server
	derpSrv *httptest.Server
	stun    *net.UDPConn
	stunEnd chan struct{}
	logf    logger.Logf
	ctrlSrv *httptest.Server
	owner   tailcfg.UserID
}

// Options configure Start.
type Options struct {
	// RequireAuth makes nodes log in interactively (there is a login URL).
	RequireAuth bool
	// Logf receives the servers' logs; nil discards them.
	Logf logger.Logf
}

// Start runs a control server and a DERP relay with a STUN server beside
// it, as a real DERP region has, on 127.0.0.1. Every node is reported
// online. Close stops them.
//
// The STUN server is there for what Tailscale does around a session, not
// for the paths (on loopback the nodes reach each other directly either
// way): a node's netcheck, which runs after each burst of traffic, asks
// each region's STUN server over UDP and falls back to an HTTPS request
// to the DERP (a new TLS connection each time) only where no STUN
// answers. Without one, every netcheck here paid that fall-back and
// reported that no UDP could be sent, and magicsock rebound its sockets
// after it: what no real tailnet does (docs/benchmarks.md, "The loopback
// tailnet with a STUN server").
//
// It turns off tsnet's per-socket network namespacing (netns) for the
// process, which needs privileges on Linux and is pointless on loopback.
func Start(opt Options) (*Net, error) {
	logf := opt.Logf
	if logf == nil {
		logf = logger.Discard
	}
	netns.SetEnabled(false)
	n := &Net{derp: derpserver.New(key.NewNode(), logf), logf: logf}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		netns.SetEnabled(true)
		return nil, fmt.Errorf("loopnet: DERP relay: %w", err)
	}
	n.derpSrv = httptest.NewUnstartedServer(derpserver.Handler(n.derp))
	n.derpSrv.Listener.Close()
	n.derpSrv.Listener = ln
	n.derpSrv.Config.ErrorLog = logger.StdLogger(logf)
	n.derpSrv.Config.TLSNextProto = make(map[string]func(*http.Server, *tls.Conn, http.Handler))
	n.derpSrv.StartTLS()
	n.stun, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		n.derpSrv.Close()
		n.derp.Close()
		netns.SetEnabled(true)
		return nil, fmt.Errorf("loopnet: STUN server: %w", err)
	}
	n.stunEnd = make(chan struct{})
	go n.serveSTUN()
	derpMap := &tailcfg.DERPMap{Regions: map[int]*tailcfg.DERPRegion{1: {RegionID: 1, RegionCode: "loop", RegionName: "loopback",
		Nodes: []*tailcfg.DERPNode{{Name: "1a", RegionID: 1, HostName: "127.0.0.1", IPv4: "127.0.0.1", IPv6: "none",
			STUNPort: n.stun.LocalAddr().(*net.UDPAddr).Port, DERPPort: ln.Addr().(*net.TCPAddr).Port, InsecureForTests: true}}}}}
	n.Server = &testcontrol.Server{DERPMap: derpMap, AllOnline: true, Logf: logf, RequireAuth: opt.RequireAuth,
		DNSConfig: &tailcfg.DNSConfig{Proxied: true}, MagicDNSDomain: "tail-scale.ts.net"}
	n.ctrlSrv = httptest.NewUnstartedServer(n.Server)
	n.Server.HTTPTestServer = n.ctrlSrv // its login URLs name it
	n.ctrlSrv.Start()
	n.URL = n.ctrlSrv.URL
	return n, nil
}

// Close stops the servers.
func (n *Net) Close() {
	n.ctrlSrv.Close()
	n.derpSrv.CloseClientConnections()
	n.derpSrv.Close()
	n.derp.Close()
	n.stun.Close()
	<-n.stunEnd
	netns.SetEnabled(true)
}

// serveSTUN answers STUN binding requests with the address each came
// from, until its socket is closed. It is cmd/derper's server
// (tailscale.com/net/stunserver) in its parts: that package logs to the
// process's standard logger, which would print in `delta demo`.
func (n *Net) serveSTUN() {
	defer close(n.stunEnd)
	buf := make([]byte, 64<<10)
	for {
		k, from, err := n.stun.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				n.logf("loopnet: STUN server stopped: %v (netchecks fall back to HTTPS to the DERP)", err)
			}
			return
		}
		pkt := buf[:k]
		if !stun.Is(pkt) {
			continue
		}
		txid, err := stun.ParseBindingRequest(pkt)
		if err != nil {
			continue
		}
		n.stun.WriteToUDPAddrPort(stun.Response(txid, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())), from)
	}
}

// SameUser makes the nodes with these keys computers of one tailnet user,
// as a person's own computers are (the test control server gives every new
// node a user of its own). The first call picks the user.
func (n *Net) SameUser(keys ...key.NodePublic) {
	for _, k := range keys {
		node := n.Server.Node(k)
		if node == nil {
			continue
		}
		if n.owner == 0 {
			n.owner = node.User
		}
		if node.User != n.owner {
			node.User = n.owner
			n.Server.UpdateNode(node)
		}
	}
}

// SameUserAll does SameUser for every node registered so far.
func (n *Net) SameUserAll() {
	var keys []key.NodePublic
	for _, node := range n.Server.AllNodes() {
		keys = append(keys, node.Key)
	}
	n.SameUser(keys...)
}

// SetOnline tells every other node that the node with key k is online or
// offline, last seen at lastSeen, as a production control server does
// when a node's map session ends or comes back: a PeersChangedPatch. From
// then on those nodes get only such injected map responses (testcontrol's
// rule), so call it once the tailnet has settled.
func (n *Net) SetOnline(k key.NodePublic, online bool, lastSeen time.Time) error {
	return SetOnline(n.Server, k, online, lastSeen)
}

// SetOnline is Net.SetOnline for any test control server (the lab runs its
// own on another address).
func SetOnline(s *testcontrol.Server, k key.NodePublic, online bool, lastSeen time.Time) error {
	node := s.Node(k)
	if node == nil {
		return fmt.Errorf("loopnet: no node with key %v", k)
	}
	patch := &tailcfg.PeerChange{NodeID: node.ID, Online: &online}
	if !online {
		patch.LastSeen = &lastSeen
	}
	for _, other := range s.AllNodes() {
		if other.Key == k {
			continue
		}
		if !s.AddRawMapResponse(other.Key, &tailcfg.MapResponse{PeersChangedPatch: []*tailcfg.PeerChange{patch}}) {
			return fmt.Errorf("loopnet: node %s has no map session to tell", other.Name)
		}
	}
	return nil
}

// NodeByHost finds the node whose host name is host.
func NodeByHost(s *testcontrol.Server, host string) (key.NodePublic, bool) {
	for _, n := range s.AllNodes() {
		if n.Hostinfo.Valid() && n.Hostinfo.Hostname() == host {
			return n.Key, true
		}
	}
	return key.NodePublic{}, false
}
