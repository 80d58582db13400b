package tailnet

import (
	"slices"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// rememberLocked notes a peer found (or found again) by hello, for
// statedir.PeersFile: a restarted Delta knows it at once, so a call to it
// in the moments before discovery finds it again is "no road yet", never
// "not one of this computer's peers".
func (n *Node) rememberLocked(p *peer) {
	old, had := n.remembered[p.name]
	rs := make([]statedir.PeerRoad, len(p.hello.Roads))
	for i, r := range p.hello.Roads {
		rs[i] = statedir.PeerRoad(r)
	}
	now := statedir.Peer{Name: p.name, Node: string(p.node), Roads: rs, SeenAt: time.Now().UTC()}
	n.remembered[p.name] = now
	if !had || old.Node != now.Node || !slices.Equal(old.Roads, now.Roads) {
		n.saveSoon()
	}
}

// forgetLocked drops a peer the tailnet no longer has.
func (n *Node) forgetLocked(name string) {
	if _, ok := n.remembered[name]; ok {
		delete(n.remembered, name)
		n.saveSoon()
	}
}

func (n *Node) saveSoon() {
	select {
	case n.saveKick <- struct{}{}:
	default:
	}
}

// saver writes peers.json after each change (coalesced), and once more at
// Close.
func (n *Node) saver() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			select {
			case <-n.saveKick:
				n.save()
			default:
			}
			return
		case <-n.saveKick:
			n.save()
		}
	}
}

func (n *Node) save() {
	n.mu.Lock()
	m := make(map[string]statedir.Peer, len(n.remembered))
	for k, v := range n.remembered {
		m[k] = v
	}
	n.mu.Unlock()
	if err := statedir.WritePeers(n.cfg.StateDir, m); err != nil {
		n.log.Warn("could not remember the peers for the next start", "err", err)
	}
}

// rememberedStatusLocked describes the remembered peers discovery has not
// found again, for status: their last roads, state unknown.
func (n *Node) rememberedStatusLocked(found map[string]bool) []localapi.PeerStatus {
	var out []localapi.PeerStatus
	for _, name := range n.rememberedNamesLocked() {
		if found[name] {
			continue
		}
		rp := n.remembered[name]
		ps := localapi.PeerStatus{Name: name}
		why := "not found on the tailnet again since Delta started (last seen " + rp.SeenAt.Format(time.RFC3339) + ")"
		ps.Roads = append(ps.Roads, localapi.RoadStatus{Road: string(roads.Tailnet), State: localapi.RoadUnknown, LastError: why})
		for _, r := range rp.Roads {
			ps.Roads = append(ps.Roads, localapi.RoadStatus{Road: string(r.Road), Address: r.Address, Interface: r.Interface, State: localapi.RoadUnknown, LastError: why})
		}
		out = append(out, ps)
	}
	return out
}

func (n *Node) rememberedNamesLocked() []string {
	names := make([]string, 0, len(n.remembered))
	for name := range n.remembered {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
