package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/delta-roads/delta/gateway/localapi"
)

// forwardOpts are delta forward's flags.
type forwardOpts struct {
	list   *bool
	remove *bool
	token  *bool
}

// forwardCommand is `delta forward PEER/APP [ADDR]`, `--list` and
// `--remove PEER/APP` (DESIGN §2b).
var forwardCommand = &command{name: "forward", args: "PEER/APP [ADDR] | --list | --remove PEER/APP",
	summary: "a URL on this computer for an app on another: every request to it goes to APP on PEER, its path unchanged, no token needed (ADDR: a loopback address, 127.0.0.1:0 takes a free port; kept and opened again at every start)",
	reads:   true,
	flags: func(fs *flag.FlagSet) any {
		return &forwardOpts{
			list:   fs.Bool("list", false, "list this computer's forwards"),
			remove: fs.Bool("remove", false, "close and forget the forward to PEER/APP"),
			token:  fs.Bool("token", false, "ask for the local token on the forward (Basic with any user name, or Bearer): for a computer several people log in to"),
		}
	},
	run: func(e *env, o any, args []string) error {
		opts := o.(*forwardOpts)
		c, err := e.client()
		if err != nil {
			return err
		}
		switch {
		case *opts.list:
			if len(args) != 0 || *opts.remove {
				return exitf(exitUsage, "forward --list takes nothing else")
			}
			fws, err := c.Forwards(e.ctx)
			if err != nil {
				return apiExit("forward --list", e.downErr(err))
			}
			if e.json {
				if fws == nil {
					fws = []localapi.Forward{}
				}
				return e.printJSON(map[string]any{"forwards": fws})
			}
			if len(fws) == 0 {
				fmt.Fprintln(e.stdout, "no forwards (delta forward PEER/APP opens one)")
			}
			for _, f := range fws {
				fmt.Fprintln(e.stdout, forwardLine(f))
			}
			return nil
		case *opts.remove:
			if len(args) != 1 {
				return exitf(exitUsage, "forward --remove takes PEER/APP, as in: delta forward --remove studio/notes")
			}
			peer, app, err := splitPeerApp(args[0])
			if err != nil {
				return err
			}
			if err := c.RemoveForward(e.ctx, peer, app); err != nil {
				return apiExit("forward --remove", e.downErr(err))
			}
			if !e.json {
				fmt.Fprintf(e.stdout, "removed the forward to %s/%s\n", peer, app)
			}
			return nil
		}
		if len(args) < 1 || len(args) > 2 {
			return exitf(exitUsage, "forward takes PEER/APP [ADDR], as in: delta forward studio/notes (or 127.0.0.1:8080 for a port of your choice)")
		}
		peer, app, err := splitPeerApp(args[0])
		if err != nil {
			return err
		}
		addr := ""
		if len(args) == 2 {
			addr = args[1]
		}
		f, err := c.Forward(e.ctx, peer, app, addr, *opts.token)
		if err != nil {
			return apiExit("forward", e.downErr(err))
		}
		if e.json {
			return e.printJSON(f)
		}
		fmt.Fprintln(e.stdout, f.URL)
		if f.BrowserURL != "" {
			fmt.Fprintf(e.stderr, "in a browser: %s (its own name: its cookies stay its own)\n", f.BrowserURL)
		}
		return nil
	}}

// splitPeerApp reads PEER/APP.
func splitPeerApp(s string) (string, string, error) {
	peer, app, ok := strings.Cut(s, "/")
	if !ok || peer == "" || app == "" || strings.Contains(app, "/") {
		return "", "", exitf(exitUsage, "forward: %q is not PEER/APP, as in studio/notes", s)
	}
	return peer, app, nil
}

// forwardLine is one forward as delta forward --list prints it.
func forwardLine(f localapi.Forward) string {
	state := f.URL
	if f.BrowserURL != "" {
		state += "\t" + f.BrowserURL
	}
	if f.Token {
		state += "\t(asks for the token)"
	}
	if !f.Open {
		state = "not open: " + f.Error + " (delta forward " + f.Peer + "/" + f.App + " opens it again)"
	}
	return f.Peer + "/" + f.App + "\t" + state
}
