package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/statedir"
)

// pairingCommand is `delta pairing`: static mode's pairing as the setup
// page shows it, and a person's answers to the computers asking to pair.
var pairingCommand = &Command{Name: "pairing", Args: "[list] | accept ID [NAME] | ignore ID | unpair NAME | rename NAME",
	Summary: "this computer's ID, the computers asking to pair with it (accept or ignore each), the peers paired (unpair one); rename this computer", Reads: true,
	Run: func(e *Env, _ any, args []string) error {
		if len(args) == 0 {
			args = []string{"list"}
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		switch {
		case args[0] == "list" && len(args) == 1:
			p, err := c.Pairing(e.Ctx)
			if err != nil {
				return APIExit("pairing", e.DownErr(err))
			}
			if e.JSON {
				return e.PrintJSON(p)
			}
			fmt.Fprintf(e.Stdout, "this computer: %s, ID %s\n", p.Self.Name, p.Self.ID)
			for _, r := range p.Requests {
				name := r.Name + " (its own name)"
				if r.Name == "" {
					name = "a computer (the name it gave is a paired peer's: give it one to accept it)"
				}
				fmt.Fprintf(e.Stdout, "asks to pair: %s at %s (%s), ID %s\n  accept: delta pairing accept %s [NAME]; ignore: delta pairing ignore %s\n",
					name, r.Address, r.Road, r.ID, r.ID, r.ID)
			}
			if len(p.Peers) == 0 {
				fmt.Fprintln(e.Stdout, "no computer is paired with this one (the setup page's Pair a Computer, or delta pair NAME=ID@HOST:PORT)")
			}
			for _, pp := range p.Peers {
				var rs []string
				for r, a := range pp.Roads {
					rs = append(rs, r+" "+a)
				}
				sort.Strings(rs)
				fmt.Fprintf(e.Stdout, "%s\t%s\t%s\t%s\n", pp.Name, pp.ID, strings.Join(rs, ", "), pp.StateWords())
			}
			return nil
		case args[0] == localapi.PairAccept && (len(args) == 2 || len(args) == 3):
			name := ""
			if len(args) == 3 {
				name = args[2]
			}
			pp, err := c.AcceptPair(e.Ctx, args[1], name)
			if err != nil {
				return APIExit("pairing accept", e.DownErr(err))
			}
			if e.JSON {
				return e.PrintJSON(pp)
			}
			fmt.Fprintln(e.Stdout, PairedLine(*pp))
			return nil
		case args[0] == localapi.PairIgnore && len(args) == 2:
			if err := c.IgnorePair(e.Ctx, args[1]); err != nil {
				return APIExit("pairing ignore", e.DownErr(err))
			}
			if !e.JSON {
				fmt.Fprintln(e.Stdout, "ignored: nothing is paired, and its requests are not shown again until Delta restarts")
			}
			return nil
		case args[0] == "unpair" && len(args) == 2:
			if err := c.Unpair(e.Ctx, args[1]); err != nil {
				return APIExit("pairing unpair", e.DownErr(err))
			}
			if !e.JSON {
				fmt.Fprintf(e.Stdout, "unpaired %s: this computer's door admits it no more (unpair this computer there too)\n", args[1])
			}
			return nil
		case args[0] == "rename" && len(args) == 2:
			self, err := c.Rename(e.Ctx, args[1])
			if err != nil {
				return APIExit("pairing rename", e.DownErr(err))
			}
			if e.JSON {
				return e.PrintJSON(self)
			}
			fmt.Fprintf(e.Stdout, "this computer is %s now (its peers know it by the names they gave it)\n", self.Name)
			return nil
		}
		return Exitf(ExitUsage, "pairing takes: [list] | accept ID [NAME] | ignore ID | unpair NAME | rename NAME")
	}}

// PairedLine says what a person's yes here did (delta pair, delta
// pairing accept).
func PairedLine(pp localapi.PairedPeer) string {
	switch pp.State {
	case localapi.PairPaired:
		return fmt.Sprintf("%s and this computer are paired.", pp.Name)
	case localapi.PairAsked:
		return fmt.Sprintf("Paired %s here, and asked it: it is paired when a person on %s accepts (its menu, its setup page, or delta pairing there).", pp.Name, pp.Name)
	}
	return fmt.Sprintf("Paired %s here; it could not be asked yet (%s): the setup page's Ask Again, or delta pair again, asks it.", pp.Name, pp.Detail)
}

// APIExit is apiExit for the commands outside this package.
func APIExit(what string, err error) error { return apiExit(what, err) }

// PairArg is one peer of delta pair: NAME=ID[@[ROAD@]HOST:PORT] read.
type PairArg struct {
	Name, ID string
	Road     roads.Road
	Address  string
}

// PairLive pairs through the local API when a Delta in static mode with
// IDs runs on the state folder (PUT /v1/pairs/NAME, as the setup page
// does): at once, each peer asked. done is false when none runs (or its
// config pairs by network key): the caller writes config.json instead,
// for the next start.
func PairLive(e *Env, fc *statedir.Config, peers []PairArg, replace bool) (done bool, err error) {
	if !fc.Static() || fc.NetworkKey != "" {
		return false, nil
	}
	if _, err := os.Stat(filepath.Join(e.StateDir, "local.json")); err != nil {
		return false, nil
	}
	c, err := e.Client()
	if err != nil {
		return false, nil // not running: the config is written
	}
	defer c.Close()
	if _, err := c.Pairing(e.Ctx); err != nil {
		return false, nil
	}
	for _, a := range peers {
		for _, p := range fc.Peers {
			if p.Name != a.Name {
				continue
			}
			for _, r := range roads.All {
				if addr, ok := p.Roads[r]; ok && a.Address == "" {
					a.Road, a.Address = r, addr
				}
			}
			if replace && p.ID != "" && p.ID != a.ID {
				if err := c.Unpair(e.Ctx, a.Name); err != nil {
					return true, APIExit("pair", err)
				}
				fmt.Fprintf(e.Stdout, "%s's ID was %s; it is %s now.\n", a.Name, p.ID, a.ID)
			}
		}
		if a.Address == "" {
			return true, Exitf(ExitUsage, "pair: peer %s is new here: give its address too, NAME=ID@HOST:PORT", a.Name)
		}
		pp, err := c.Pair(e.Ctx, a.Name, localapi.PairWith{ID: a.ID, Address: a.Address, Road: string(a.Road)})
		if err != nil {
			return true, APIExit("pair", err)
		}
		fmt.Fprintln(e.Stdout, PairedLine(*pp))
	}
	return true, nil
}
