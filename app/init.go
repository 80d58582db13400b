package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/statedir"
	"github.com/delta-roads/delta/gateway/static"
)

type initOpts struct {
	static     *bool
	peers      *[]roads.StaticPeer
	name       *string
	peerListen *string
	networkKey *string
}

// initCommand is `delta init`: static mode's config.json, written for the
// person, with a fresh network key unless one is given.
var initCommand = &command{name: "init", args: "--static --peer NAME=[ROAD@]HOST:PORT … [--name NAME] [--peer-listen HOST:PORT] [--network-key HEX]",
	summary: "write config.json for static mode: peers by address, no tailnet, a fresh network key (tailnet mode needs no config)",
	flags: func(fs *flag.FlagSet) any {
		o := &initOpts{peers: new([]roads.StaticPeer)}
		o.static = fs.Bool("static", false, "static mode: the peers are named here with their addresses, and the tailnet is not joined")
		fs.Func("peer", "a peer, NAME=HOST:PORT (its lan road) or NAME=ROAD@HOST:PORT (ROAD: thunderbolt, lan or tailnet); repeat it for more roads or peers", func(v string) error {
			return addPeer(o.peers, v)
		})
		o.name = fs.String("name", "", "this computer's name among its peers (default: its host name)")
		o.peerListen = fs.String("peer-listen", "", "where this computer's peer API listens, HOST:PORT (default "+static.DefaultPeerListen+")")
		o.networkKey = fs.String("network-key", "", "the network key of the other computers (hex), when this one joins them; default: a fresh one")
		return o
	},
	run: func(e *env, o any, args []string) error {
		if len(args) > 0 {
			return exitf(exitUsage, "init: unexpected argument %q", args[0])
		}
		opts := o.(*initOpts)
		if !*opts.static {
			return exitf(exitUsage, "init: only static mode has a config to write (--static); tailnet mode needs none: run delta and log in")
		}
		fc, err := staticConfig(*opts.peers, *opts.name, *opts.peerListen, *opts.networkKey)
		if err != nil {
			return exitf(exitUsage, "init: %v", err)
		}
		path := filepath.Join(e.stateDir, statedir.ConfigFile)
		if _, err := os.Stat(path); err == nil {
			return exitf(exitFailed, "init: %s exists already: nothing was written (edit it, or remove it and run init again)", path)
		}
		if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
			return exitf(exitFailed, "init: the state folder: %v", err)
		}
		if err := statedir.WriteJSON(path, fc); err != nil {
			return exitf(exitFailed, "init: write %s: %v", path, err)
		}
		listen := fc.PeerListen
		if listen == "" {
			listen = static.DefaultPeerListen
		}
		name := fc.Name
		if name == "" {
			name = "THIS-COMPUTER"
		}
		fmt.Fprintf(e.stdout, "Wrote %s: static mode, %s, this computer's peer API on %s.\n", path, peerWords(fc.Peers), listen)
		fmt.Fprintf(e.stdout, "On each peer, with the same network key and this computer's address as its peer:\n\n  delta init --static --network-key %s --peer %s=%s\n\n", fc.NetworkKey, name, reachableAs(listen))
		fmt.Fprintln(e.stdout, "Then start Delta (delta, or delta run --state-dir …). The key lets any holder use these computers: keep it as you keep a password.")
		return nil
	}}

// addPeer adds one --peer NAME=[ROAD@]HOST:PORT to peers: a second road of
// a peer named before joins it.
func addPeer(peers *[]roads.StaticPeer, v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || name == "" || addr == "" {
		return fmt.Errorf("%q is not NAME=HOST:PORT or NAME=ROAD@HOST:PORT", v)
	}
	if err := proto.CheckName("peer", name); err != nil {
		return err
	}
	road := roads.LAN
	if r, rest, ok := strings.Cut(addr, "@"); ok {
		parsed, err := roads.Parse(r)
		if err != nil {
			return fmt.Errorf("peer %s: road %q is not one of thunderbolt, lan, tailnet", name, r)
		}
		road, addr = parsed, rest
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("peer %s: %q is not HOST:PORT: %v", name, addr, err)
	}
	for i := range *peers {
		p := &(*peers)[i]
		if p.Name != name {
			continue
		}
		if _, dup := p.Roads[road]; dup {
			return fmt.Errorf("peer %s: its %s road is given twice", name, road)
		}
		p.Roads[road] = addr
		return nil
	}
	*peers = append(*peers, roads.StaticPeer{Name: name, Roads: map[roads.Road]string{road: addr}})
	return nil
}

// staticConfig is the config.json that init writes, checked as Delta
// checks it at start.
func staticConfig(peers []roads.StaticPeer, name, peerListen, key string) (*statedir.Config, error) {
	if len(peers) == 0 {
		return nil, errors.New("static mode needs at least one --peer NAME=HOST:PORT")
	}
	if err := static.CheckPeers(peers); err != nil {
		return nil, err
	}
	if name != "" {
		if err := proto.CheckName("computer", name); err != nil {
			return nil, err
		}
		for _, p := range peers {
			if p.Name == name {
				return nil, fmt.Errorf("--name %s is also a --peer: a computer is not its own peer", name)
			}
		}
	}
	if peerListen != "" {
		if _, _, err := net.SplitHostPort(peerListen); err != nil {
			return nil, fmt.Errorf("--peer-listen %q is not HOST:PORT: %v", peerListen, err)
		}
	}
	if key == "" {
		key = static.NewKey()
	} else if _, err := static.ParseKey(key); err != nil {
		return nil, fmt.Errorf("--network-key: %v", err)
	}
	return &statedir.Config{Name: name, PeerListen: peerListen, NetworkKey: key, Peers: peers}, nil
}

func peerWords(peers []roads.StaticPeer) string {
	var parts []string
	for _, p := range peers {
		var rs []string
		for _, r := range roads.All {
			if a, ok := p.Roads[r]; ok {
				rs = append(rs, fmt.Sprintf("%s %s", r, a))
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, strings.Join(rs, ", ")))
	}
	if len(parts) == 1 {
		return "one peer: " + parts[0]
	}
	return fmt.Sprintf("%d peers: %s", len(parts), strings.Join(parts, "; "))
}

// reachableAs is how a peer names a listener on listen: an unspecified
// host (0.0.0.0, [::], none) listens on every address, and the peer must
// be given one of them.
func reachableAs(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("THIS-COMPUTERS-ADDRESS", port)
	}
	return listen
}
