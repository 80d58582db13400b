package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/net/identity"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/netwatch"
)

// idCommand is `delta id`: this computer's ID in static mode, made on
// first use (as Delta makes it at start), for the other computers to pair
// with.
var idCommand = &cli.Command{Name: "id", Summary: "this computer's ID, which the others pair with in static mode (delta pair, delta init --peer NAME=ID@…)",
	Run: func(e *cli.Env, _ any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "id: unexpected argument %q", args[0])
		}
		fc, err := statedir.ReadConfig(e.StateDir)
		if err != nil {
			return cli.Exitf(cli.ExitFailed, "id: %v", err)
		}
		name := fc.Name
		if name == "" {
			if name, err = netwatch.ComputerName(); err != nil {
				name = "delta"
			}
		}
		if err := cli.StateFolderExists(e.StateDir); err != nil {
			return cli.Exitf(cli.ExitFailed, "id: %v", err)
		}
		id, err := ownID(e.StateDir, name)
		if err != nil {
			return cli.Exitf(cli.ExitFailed, "id: %v", err)
		}
		fmt.Fprintln(e.Stdout, id)
		return nil
	}}

// pairCommandDef is `delta pair NAME=ID[@[ROAD@]HOST:PORT] …`: a peer's ID
// (and road) written into config.json, the peer added when it is new. Once
// every peer has an ID the network key, if any, is dropped: the roads are
// TLS pinned to the IDs from the next start on.
var pairCommandDef = &cli.Command{Name: "pair", Args: "NAME=ID[@[ROAD@]HOST:PORT] … [--replace]",
	Summary: "pair this computer with a peer by its ID (its roads become TLS pinned to it): at once, asking the peer, when Delta runs here; else from its next start",
	Flags: func(fs *flag.FlagSet) any {
		return fs.Bool("replace", false, "replace the ID of a peer paired already (delta pair says which, and asks for this first)")
	},
	Run: func(e *cli.Env, o any, args []string) error {
		replace := *o.(*bool)
		if len(args) == 0 {
			return cli.Exitf(cli.ExitUsage, "pair: name a peer, NAME=ID or NAME=ID@HOST:PORT (its ID as delta id prints it there)")
		}
		if err := cli.StateFolderExists(e.StateDir); err != nil {
			return cli.Exitf(cli.ExitFailed, "pair: %v", err)
		}
		path := filepath.Join(e.StateDir, statedir.ConfigFile)
		fc, err := statedir.ReadConfig(e.StateDir)
		if err != nil {
			return cli.Exitf(cli.ExitFailed, "pair: %v", err)
		}
		if done, err := pairLive(e, fc, args, replace); done {
			return err
		}
		if !fc.Static() {
			return cli.Exitf(cli.ExitFailed, "pair: %s names no peers: this is not a static config (delta init --static writes one; delta run --static starts one waiting to be paired)", path)
		}
		var replaced []string
		for _, a := range args {
			was, err := pairPeer(fc, a, replace)
			if err != nil {
				return cli.Exitf(cli.ExitUsage, "pair: %v; nothing was written", err)
			}
			if was != "" {
				replaced = append(replaced, was)
			}
		}
		own, err := ownID(e.StateDir, fc.Name)
		if err != nil {
			return cli.Exitf(cli.ExitFailed, "pair: %v", err)
		}
		if err := static.CheckSelf(own, fc.Peers); err != nil {
			return cli.Exitf(cli.ExitUsage, "pair: %v; nothing was written", err)
		}
		if err := static.CheckPeers(fc.Peers); err != nil {
			return cli.Exitf(cli.ExitUsage, "pair: %v; nothing was written", err)
		}
		ids, err := static.PeerIDs(fc.Peers)
		var missing string
		if err != nil {
			var names []string
			for _, p := range fc.Peers {
				if p.ID == "" {
					names = append(names, p.Name)
				}
			}
			if len(names) == 0 {
				return cli.Exitf(cli.ExitUsage, "pair: %v; nothing was written", err)
			}
			missing = fmt.Sprintf(" %s still has no ID: pair it too (delta pair %s=ID), or Delta will not start.", names[0], names[0])
		}
		if ids != nil && fc.NetworkKey != "" {
			fc.NetworkKey = "" // every peer is paired by ID: the key signs nothing any more
		}
		if err := statedir.WriteJSON(path, fc); err != nil {
			return cli.Exitf(cli.ExitFailed, "pair: write %s: %v", path, err)
		}
		for _, r := range replaced {
			fmt.Fprintln(e.Stdout, r)
		}
		fmt.Fprintf(e.Stdout, "Paired in %s: %s.%s\n", path, peerWords(fc.Peers), missing)
		again := "Start"
		if _, err := os.Stat(filepath.Join(e.StateDir, "local.json")); err == nil {
			again = "Restart" // a Delta runs on this folder
		}
		fmt.Fprintf(e.Stdout, "This computer's ID is %s. %s Delta here to use it (it reads config.json at start).\n", own, again)
		return nil
	}}

// pairLive is cli.PairLive with args read: done is false when no Delta
// runs on the folder to pair through (config.json is written instead).
func pairLive(e *cli.Env, fc *statedir.Config, args []string, replace bool) (done bool, err error) {
	var peers []cli.PairArg
	for _, v := range args {
		name, id, road, addr, err := parsePeer(v)
		if err != nil {
			return true, cli.Exitf(cli.ExitUsage, "pair: %v", err)
		}
		if id == "" {
			return true, cli.Exitf(cli.ExitUsage, "pair: %q names no ID: NAME=ID@HOST:PORT (delta id prints it on %s)", v, name)
		}
		peers = append(peers, cli.PairArg{Name: name, ID: id, Road: road, Address: addr})
	}
	return cli.PairLive(e, fc, peers, replace)
}

// pairPeer sets one NAME=ID[@[ROAD@]HOST:PORT] in fc. A peer paired with
// another ID already keeps it unless replace (issue 63, D10: a stranger's
// ID taking a paired peer's name without a word); when it is replaced,
// replaced says which ID went.
func pairPeer(fc *statedir.Config, v string, replace bool) (replaced string, err error) {
	name, id, road, addr, err := parsePeer(v)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("%q names no ID: NAME=ID@HOST:PORT (delta id prints it on %s)", v, name)
	}
	if _, err := identity.Parse(id); err != nil {
		return "", err
	}
	for i := range fc.Peers {
		p := &fc.Peers[i]
		if p.Name != name {
			continue
		}
		if p.ID != "" && p.ID != id {
			if !replace {
				return "", fmt.Errorf("%s is paired already with the ID %s, and %s is another: a computer that is not %s could be asking to take its place; "+
					"if %s has a new ID (its state folder was made anew), pair it again with --replace", name, p.ID, id, name, name)
			}
			replaced = fmt.Sprintf("%s's ID was %s; it is %s now.", name, p.ID, id)
		}
		p.ID = id
		if addr != "" {
			p.Roads[road] = addr
		}
		return replaced, nil
	}
	if addr == "" {
		return "", errors.New("peer " + name + " is new here: give its address too, NAME=ID@HOST:PORT")
	}
	fc.Peers = append(fc.Peers, roads.StaticPeer{Name: name, ID: id, Roads: map[roads.Road]string{road: addr}})
	return "", nil
}
