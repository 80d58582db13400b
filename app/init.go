package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/netwatch"
)

type initOpts struct {
	static     *bool
	peers      *[]roads.StaticPeer
	name       *string
	peerListen *string
	networkKey *string
}

// initCommand is `delta init`: static mode's config.json, written for the
// person: this computer's identity made, the peers by name, address and
// (when known) ID, and the command for each other computer printed whole.
// With --network-key, the older kind of config: a shared key, plain TCP.
var initCommand = &cli.Command{Name: "init", Args: "--static --peer NAME=[ID@][ROAD@]HOST:PORT … [--name NAME] [--peer-listen HOST:PORT]",
	Summary: "write config.json for static mode: peers by ID and address, no tailnet, every road TLS pinned to the peer's ID (tailnet mode needs no config)",
	Flags: func(fs *flag.FlagSet) any {
		o := &initOpts{peers: new([]roads.StaticPeer)}
		o.static = fs.Bool("static", false, "static mode: the peers are named here with their addresses, and the tailnet is not joined")
		fs.Func("peer", "a peer, NAME=ID@HOST:PORT (its ID, as `delta id` prints it there, and its lan road), NAME=ID@ROAD@HOST:PORT (ROAD: thunderbolt, lan or tailnet), or without ID@ when it has none yet; repeat it for more roads or peers", func(v string) error {
			return addPeer(o.peers, v)
		})
		o.name = fs.String("name", "", "this computer's name among its peers (default: its host name)")
		o.peerListen = fs.String("peer-listen", "", "where this computer's peer API listens, HOST:PORT (default "+static.DefaultPeerListen+" when every peer is on loopback, else 0.0.0.0:7421)")
		o.networkKey = fs.String("network-key", "", "the older kind of static network: a key shared by every computer (hex, or \"new\" for a fresh one), plain TCP, no IDs; only for computers that still run it")
		return o
	},
	Run: func(e *cli.Env, o any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "init: unexpected argument %q", args[0])
		}
		opts := o.(*initOpts)
		if !*opts.static {
			return cli.Exitf(cli.ExitUsage, "init: only static mode has a config to write (--static); tailnet mode needs none: run delta and log in")
		}
		name := *opts.name
		if name == "" {
			// Written down, so that the name the peers are told is the
			// one this computer keeps, whatever its host name becomes.
			n, err := netwatch.ComputerName()
			if err != nil {
				return cli.Exitf(cli.ExitUsage, "init: this computer has no name to give its peers (%v): name it with --name", err)
			}
			name = n
		}
		fc, err := staticConfig(*opts.peers, name, *opts.peerListen, *opts.networkKey)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "init: %v", err)
		}
		path := filepath.Join(e.StateDir, statedir.ConfigFile)
		if _, err := os.Stat(path); err == nil {
			return cli.Exitf(cli.ExitFailed, "init: %s exists already: nothing was written (edit it, or remove it and run init again; delta pair adds a peer's ID)", path)
		}
		if err := os.MkdirAll(e.StateDir, 0o700); err != nil {
			return cli.Exitf(cli.ExitFailed, "init: the state folder: %v", err)
		}
		var own identity.ID
		if fc.NetworkKey == "" {
			// This computer's identity, made now so that its ID can be
			// printed for the others; Delta uses the same at start.
			if own, err = ownID(e.StateDir, fc.Name); err != nil {
				return cli.Exitf(cli.ExitFailed, "init: %v", err)
			}
			if err := static.CheckSelf(own, fc.Peers); err != nil {
				return cli.Exitf(cli.ExitUsage, "init: %v", err)
			}
		}
		if err := statedir.WriteJSON(path, fc); err != nil {
			return cli.Exitf(cli.ExitFailed, "init: write %s: %v", path, err)
		}
		listen := fc.PeerListen
		if listen == "" {
			listen = static.DefaultPeerListen
		}
		if fc.NetworkKey != "" {
			printNetworkKeyInit(e, fc, path, listen)
			return nil
		}
		fmt.Fprintf(e.Stdout, "Wrote %s: static mode, this computer is %s, %s, its peer API on %s.\n", path, fc.Name, peerWords(fc.Peers), listen)
		fmt.Fprintf(e.Stdout, "This computer's ID is %s (delta id prints it again).\n\n", own)
		var later []string
		for _, p := range fc.Peers {
			here := stateDirBeside(e.StateDir, p)
			also := ""
			if here != "" {
				also = ", and, since it is on this computer too, a state folder of its own beside this one"
			}
			if p.ID == "" {
				fmt.Fprintf(e.Stdout, "On %s, run this as it is (it names %s, where it listens, and this computer with its ID%s):\n\n  %s%s\n\n", p.Name, p.Name, also, peerCommand(fc, p, own), here)
				later = append(later, p.Name)
			} else {
				fmt.Fprintf(e.Stdout, "On %s, run this as it is (it tells %s this computer's ID and address%s):\n\n  %s%s\n\n", p.Name, p.Name, also, pairCommand(fc, p, own), here)
			}
		}
		if len(later) > 0 {
			fmt.Fprintf(e.Stdout, "Then here, run the delta pair line that %s prints (it names its ID), and start Delta on each.\n", strings.Join(later, " and "))
		} else {
			fmt.Fprintln(e.Stdout, "Then start Delta on each (delta, or delta --state-dir …).")
		}
		fmt.Fprintln(e.Stdout, "Every road between them is TLS, pinned to these IDs: an ID is not a secret, and no computer can pose as another.")
		return nil
	}}

// printNetworkKeyInit is init's words for the older kind of config.
func printNetworkKeyInit(e *cli.Env, fc *statedir.Config, path, listen string) {
	fmt.Fprintf(e.Stdout, "Wrote %s: static mode with a network key (plain TCP, no IDs), this computer is %s, %s, its peer API on %s.\n", path, fc.Name, peerWords(fc.Peers), listen)
	if len(fc.Peers) == 1 {
		fmt.Fprintln(e.Stdout, "On the other computer, run this as it is (it names that computer, where it listens, this network's key and this computer):")
	} else {
		fmt.Fprintln(e.Stdout, "On each other computer, run its line as it is (each names that computer, where it listens, this network's key and the others):")
	}
	fmt.Fprintln(e.Stdout)
	for _, p := range fc.Peers {
		fmt.Fprintf(e.Stdout, "  %s%s\n", peerCommand(fc, p, identity.ID{}), stateDirBeside(e.StateDir, p))
	}
	fmt.Fprintln(e.Stdout)
	fmt.Fprintln(e.Stdout, "Then start Delta on each (delta, or delta --state-dir …). The key lets any holder use these computers: keep it as you keep a password.")
	fmt.Fprintln(e.Stdout, "Requests and answers cross the network in plain TCP. To seal them, pair the computers by ID: docs/guide.md, \"From a network key to IDs\".")
}

// stateDirBeside is " --state-dir DIR" for peer p when every address it
// was given is on loopback, so that it runs on this computer too (the
// README's walkthrough on one machine): a folder named after it beside
// this one, which the printed command then works in as it is, instead of
// this user's default folder, which one of the two would share. Else "".
func stateDirBeside(stateDir string, p roads.StaticPeer) string {
	if stateDir == "" || len(p.Roads) == 0 {
		return ""
	}
	for _, a := range p.Roads {
		host, _, err := net.SplitHostPort(a)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || !ip.IsLoopback() {
			return ""
		}
	}
	return " --state-dir " + shellWord(filepath.Join(filepath.Dir(filepath.Clean(stateDir)), p.Name))
}

// shellWord is s as one word for a POSIX shell: as it is when it has only
// safe characters, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ownID is the ID of the certificate in dir, made now if there is none.
func ownID(dir, name string) (identity.ID, error) {
	id, _, err := static.OwnID(dir, name)
	return id, err
}

// pairCommand is the `delta pair` line for peer p, which knows its peers
// by ID already: this computer's name, ID and the address p reaches it at.
func pairCommand(fc *statedir.Config, p roads.StaticPeer, own identity.ID) string {
	self := fc.PeerListen
	if self == "" {
		self = static.DefaultPeerListen
	}
	var parts []string
	for _, r := range roads.All {
		if a, ok := p.Roads[r]; ok && r.Local() {
			road := ""
			if r != roads.LAN {
				road = string(r) + "@"
			}
			parts = append(parts, fmt.Sprintf("%s=%s@%s%s", fc.Name, own, road, reachableFrom(self, a, localAddrToward)))
		}
	}
	return "delta pair " + strings.Join(parts, " ")
}

// peerCommand is the whole `delta init` for peer p of the network fc
// describes: p's name, where p listens (the address this computer was
// given for it), the network key, this computer, and the other peers.
func peerCommand(fc *statedir.Config, p roads.StaticPeer, own identity.ID) string {
	var listen []string
	for _, r := range roads.All {
		if a, ok := p.Roads[r]; ok && r.Local() {
			listen = append(listen, a)
		}
	}
	at := "0.0.0.0:7421"
	switch {
	case len(listen) == 1:
		at = listen[0]
	case len(listen) > 1:
		// One listener serves every road: every address, on the port
		// the roads share (else the first road's).
		_, port, _ := net.SplitHostPort(listen[0])
		at = net.JoinHostPort("0.0.0.0", port)
	}
	self := fc.PeerListen
	if self == "" {
		self = static.DefaultPeerListen
	}
	cmd := fmt.Sprintf("delta init --static --name %s --peer-listen %s", p.Name, at)
	id := ""
	if fc.NetworkKey != "" {
		cmd += " --network-key " + fc.NetworkKey
	} else {
		id = own.String() + "@"
	}
	for _, r := range roads.All {
		if a, ok := p.Roads[r]; ok && r.Local() {
			road := ""
			if r != roads.LAN {
				road = string(r) + "@"
			}
			cmd += fmt.Sprintf(" --peer %s=%s%s%s", fc.Name, id, road, reachableFrom(self, a, localAddrToward))
		}
	}
	for _, o := range fc.Peers {
		if o.Name == p.Name {
			continue
		}
		oid := ""
		if o.ID != "" {
			oid = o.ID + "@"
		}
		for _, r := range roads.All {
			if a, ok := o.Roads[r]; ok {
				road := ""
				if r != roads.LAN {
					road = string(r) + "@"
				}
				cmd += fmt.Sprintf(" --peer %s=%s%s%s", o.Name, oid, road, a)
			}
		}
	}
	return cmd
}

// addPeer adds one --peer NAME=[ID@][ROAD@]HOST:PORT to peers: a second
// road of a peer named before joins it.
func addPeer(peers *[]roads.StaticPeer, v string) error {
	name, id, road, addr, err := parsePeer(v)
	if err != nil {
		return err
	}
	if addr == "" {
		return fmt.Errorf("peer %s: %q names no HOST:PORT; give the address it listens on (NAME=ID@HOST:PORT)", name, v)
	}
	for i := range *peers {
		p := &(*peers)[i]
		if p.Name != name {
			continue
		}
		if _, dup := p.Roads[road]; dup {
			return fmt.Errorf("peer %s: its %s road is given twice", name, road)
		}
		if id != "" && p.ID != "" && p.ID != id {
			return fmt.Errorf("peer %s: two IDs are given for it", name)
		}
		if id != "" {
			p.ID = id
		}
		p.Roads[road] = addr
		return nil
	}
	*peers = append(*peers, roads.StaticPeer{Name: name, ID: id, Roads: map[roads.Road]string{road: addr}})
	return nil
}

// parsePeer reads NAME=[ID@][ROAD@]HOST:PORT, or NAME=ID alone (addr ""):
// the ID in its written form, the road lan when none is named.
func parsePeer(v string) (name, id string, road roads.Road, addr string, err error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" || rest == "" {
		return "", "", "", "", fmt.Errorf("%q is not NAME=ID@HOST:PORT, NAME=ID@ROAD@HOST:PORT or NAME=HOST:PORT", v)
	}
	if err := proto.CheckName("peer", name); err != nil {
		return "", "", "", "", err
	}
	road = roads.LAN
	first, after, hasAt := strings.Cut(rest, "@")
	if !hasAt && strings.ContainsAny(first, ".:") {
		if _, _, err := net.SplitHostPort(first); err != nil {
			// IDs have neither: an address whose port was forgotten.
			return "", "", "", "", fmt.Errorf("peer %s: %q has no port: give the port its Delta listens on (%s=HOST:PORT, as %s=%s:7421)", name, first, name, name, strings.Trim(first, "[]:"))
		}
	}
	if _, _, hp := net.SplitHostPort(first); hp != nil && !isRoadWord(first) {
		// Not an address and not a road: an ID.
		parsed, err := identity.Parse(first)
		if err != nil {
			return "", "", "", "", fmt.Errorf("peer %s: %w", name, err)
		}
		id = parsed.String()
		if !hasAt {
			return name, id, road, "", nil
		}
		rest = after
	}
	if r, a, ok := strings.Cut(rest, "@"); ok {
		parsed, err := roads.Parse(r)
		if err != nil {
			if id == "" {
				// A word before @ that is neither: say both, not a guess.
				return "", "", "", "", fmt.Errorf("peer %s: %q before @ is neither a road (thunderbolt, lan, tailnet) nor a Delta ID (56 letters and digits in 8 groups, as delta id prints it)", name, r)
			}
			return "", "", "", "", fmt.Errorf("peer %s: %w", name, err)
		}
		road, rest = parsed, a
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		return "", "", "", "", fmt.Errorf("peer %s: %q is not HOST:PORT: %v", name, rest, err)
	}
	if err := static.CheckPort(rest); err != nil {
		return "", "", "", "", fmt.Errorf("peer %s: %w", name, err)
	}
	return name, id, road, rest, nil
}

// isRoadWord reports whether s looks like a road's name (a word before @
// that is not an ID): thunderbolt, lan, tailnet, or a short lowercase
// word, so that a mistyped road is named as one.
func isRoadWord(s string) bool {
	if _, err := roads.Parse(s); err == nil {
		return true
	}
	return len(s) < 20 && strings.ToLower(s) == s && !strings.ContainsAny(s, "-0123456789")
}

// staticConfig is the config.json that init writes, checked as Delta
// checks it at start.
func staticConfig(peers []roads.StaticPeer, name, peerListen, key string) (*statedir.Config, error) {
	if len(peers) == 0 {
		return nil, errors.New("static mode needs at least one --peer NAME=ID@HOST:PORT (or NAME=HOST:PORT for a computer whose ID is not known yet)")
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
		host, _, err := net.SplitHostPort(peerListen)
		if err != nil {
			return nil, fmt.Errorf("--peer-listen %q is not HOST:PORT: %v", peerListen, err)
		}
		if proto.IsLoopbackHost(host) {
			for _, p := range peers {
				for r, a := range p.Roads {
					if h, _, _ := net.SplitHostPort(a); !proto.IsLoopbackHost(h) {
						return nil, fmt.Errorf("--peer-listen %s is on loopback, where %s (%s %s) cannot reach it: give an address of this computer's that %s can reach, or 0.0.0.0:PORT for every address", peerListen, p.Name, r, a, p.Name)
					}
				}
			}
		}
	} else {
		for _, p := range peers {
			for _, a := range p.Roads {
				if h, _, _ := net.SplitHostPort(a); !proto.IsLoopbackHost(h) {
					// A peer off this computer must reach the peer
					// API: not on loopback (static.DefaultPeerListen).
					peerListen = "0.0.0.0:7421"
				}
			}
		}
	}
	switch {
	case key == "":
	case key == "new":
		key = static.NewKey()
	default:
		if _, err := static.ParseKey(key); err != nil {
			return nil, fmt.Errorf("--network-key: %v", err)
		}
	}
	if key != "" {
		for _, p := range peers {
			if p.ID != "" {
				return nil, fmt.Errorf("--network-key and an ID for peer %s: a network of IDs needs no key (leave --network-key out)", p.Name)
			}
		}
	}
	return &statedir.Config{Mode: statedir.ModeStatic, Name: name, PeerListen: peerListen, NetworkKey: key, Peers: peers}, nil
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
		return "its peer " + parts[0]
	}
	return fmt.Sprintf("%d peers: %s", len(parts), strings.Join(parts, "; ")) // never one: that is its peer
}

// reachableFrom is how the peer at peerAddr names a listener of this
// computer's on listen: listen itself when it names one address, else
// the address of this computer's that the system routes toward the peer
// (toward: a UDP socket's local address, which sends nothing), else a
// placeholder to fill in.
func reachableFrom(listen, peerAddr string, toward func(string) string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return listen
	}
	if ip := toward(peerAddr); ip != "" {
		return net.JoinHostPort(ip, port)
	}
	return reachableAs(listen)
}

// localAddrToward is the address of this computer's that the system
// would send from to addr (HOST:PORT), or "". Nothing is sent: a UDP
// socket's connect only picks a route.
func localAddrToward(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	if u, ok := c.LocalAddr().(*net.UDPAddr); ok && !u.IP.IsUnspecified() {
		return u.IP.String()
	}
	return ""
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
