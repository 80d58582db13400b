package tailnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/roads/localroads"
	"github.com/delta-roads/delta/netwatch"
)

// Waking a peer (opt-in on the peer: "wake_on_lan": true in its
// config.json). Its hello then carries the MAC address of each lan and
// thunderbolt interface it listens on. When every road to it is refused
// (held down after a silent connect, or offline on the tailnet), a read or
// a call sends a Wake-on-LAN magic packet out of each of this computer's
// interfaces that leads to one of those roads, and is told so; it is still
// not sent. When the peer answers its probes again, its roads come back as
// any road does.

// wakeEvery bounds how often one peer is sent wake-ups.
const wakeEvery = 10 * time.Second

// wakePort is the Wake-on-LAN port (discard).
const wakePort = 9

// MagicPacket is the Wake-on-LAN payload for mac: six 0xFF bytes, then
// the address sixteen times.
func MagicPacket(mac net.HardwareAddr) ([]byte, error) {
	if len(mac) != 6 {
		return nil, fmt.Errorf("tailnet: %q is not a 48-bit MAC address", mac)
	}
	return append(bytes.Repeat([]byte{0xff}, 6), bytes.Repeat(mac, 16)...), nil
}

// AsleepError refuses a request to a peer with every road refused, after
// Delta sent it a wake-up. Nothing was sent to the peer's Delta.
type AsleepError struct {
	Peer string
	// Cause is the refusal that made Delta wake it (a hold-down, the
	// tailnet's offline).
	Cause error
	// Sent says where the wake-ups went ("AA:BB:… via en0"); Ago is how
	// long ago, when it was an earlier caller's.
	Sent []string
	Ago  time.Duration
}

func (e *AsleepError) Error() string {
	when := ""
	if e.Ago >= time.Second {
		when = fmt.Sprintf(" %.0f s ago", e.Ago.Seconds())
	}
	return fmt.Sprintf("%s is asleep; Delta sent it a wake-up%s (%s) after: %v", e.Peer, when, strings.Join(e.Sent, ", "), e.Cause)
}

func (e *AsleepError) Unwrap() error { return e.Cause }

// wakeTarget is one wake-up to send: the peer's MAC, out of one of ours.
type wakeTarget struct {
	mac   net.HardwareAddr
	iface string
}

func (w wakeTarget) String() string { return w.mac.String() + " via " + w.iface }

// wakeTargetsLocked are the wake-ups for p: each MAC in its hello, out of
// the local interface of the same road that reaches its address.
func (n *Node) wakeTargetsLocked(p *peer) []wakeTarget {
	if p.hello == nil {
		return nil
	}
	var out []wakeTarget
	seen := map[string]bool{}
	for _, hr := range p.hello.Roads {
		if hr.MAC == "" || hr.Road == roads.Tailnet {
			continue
		}
		mac, err := net.ParseMAC(hr.MAC)
		ap, aerr := netip.ParseAddrPort(hr.Address)
		if err != nil || aerr != nil {
			continue
		}
		iface := n.ifaces.InterfaceFor(hr.Road, ap.Addr())
		if iface == "" || seen[hr.MAC+iface] {
			continue
		}
		seen[hr.MAC+iface] = true
		out = append(out, wakeTarget{mac: mac, iface: iface})
	}
	return out
}

// maybeWake turns a refusal of every road to peer into an AsleepError when
// the peer allows waking: it sends the wake-ups (at most every wakeEvery)
// and says so. Otherwise it returns err as it is.
func (n *Node) maybeWake(peer string, err error) error {
	if !errors.Is(err, roads.ErrHeldDown) && !errors.Is(err, roads.ErrOffline) {
		return err
	}
	n.mu.Lock()
	p := n.peers[peer]
	if p == nil {
		n.mu.Unlock()
		return err
	}
	targets := n.wakeTargetsLocked(p)
	if len(targets) == 0 {
		n.mu.Unlock()
		return err
	}
	now := time.Now()
	if ago := now.Sub(p.wokeAt); ago < wakeEvery {
		sent := p.wokeTo
		n.mu.Unlock()
		return &AsleepError{Peer: peer, Cause: err, Sent: sent, Ago: ago}
	}
	p.wokeAt = now
	n.mu.Unlock()
	var sent, failed []string
	for _, w := range targets {
		if werr := sendWake(w); werr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", w, werr))
			continue
		}
		sent = append(sent, w.String())
	}
	if len(sent) == 0 {
		n.log.Warn("could not wake peer", "peer", peer, "errors", strings.Join(failed, "; "))
		return err
	}
	n.log.Info("peer is asleep on every road: sent it a wake-up", "peer", peer, "to", strings.Join(sent, ", "), "cause", err)
	n.mu.Lock()
	p.wokeTo = sent
	n.mu.Unlock()
	return &AsleepError{Peer: peer, Cause: err, Sent: sent}
}

// sendWake sends one magic packet to the broadcast address out of w.iface.
func sendWake(w wakeTarget) error {
	pkt, err := MagicPacket(w.mac)
	if err != nil {
		return err
	}
	lc := net.ListenConfig{Control: netwatch.BroadcastControl(w.iface)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := lc.ListenPacket(ctx, "udp4", ":0")
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WriteTo(pkt, &net.UDPAddr{IP: net.IPv4bcast, Port: wakePort})
	return err
}

// helloMACLocked is the MAC address hello publishes for listener l, when
// this computer allows its peers to wake it: that of the interface that
// holds its address.
func (n *Node) helloMACLocked(l localroads.Listener) string {
	if !n.cfg.AllowWake {
		return ""
	}
	iface := l.Interface
	if iface == "" {
		if ap, err := netip.ParseAddrPort(l.Addr().String()); err == nil {
			iface = n.ifaces.InterfaceFor(l.Road, ap.Addr())
		}
	}
	if iface == "" {
		return ""
	}
	ifc, err := net.InterfaceByName(iface)
	if err != nil || len(ifc.HardwareAddr) != 6 {
		return ""
	}
	return ifc.HardwareAddr.String()
}
