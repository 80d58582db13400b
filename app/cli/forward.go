package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/delta-roads/delta/api/localapi"
)

// forwardOpts are delta forward's flags.
type forwardOpts struct {
	list    *bool
	remove  *bool
	token   *bool
	timeout *string
}

// forwardCommand is `delta forward PEER/APP [ADDR]`, `--list` and
// `--remove PEER/APP` (docs/design.md §2b).
var forwardCommand = &Command{Name: "forward", Args: "PEER/APP [ADDR] | --list | --remove PEER/APP",
	Summary: "a URL on this computer for an app on another: every request to it goes to APP on PEER, its path unchanged, no token needed (ADDR: a loopback address, 127.0.0.1:0 takes a free port; kept and opened again at every start)",
	Reads:   true,
	Flags: func(fs *flag.FlagSet) any {
		return &forwardOpts{
			list:   fs.Bool("list", false, "list this computer's forwards"),
			remove: fs.Bool("remove", false, "close and forget the forward to PEER/APP"),
			token:  fs.Bool("token", false, "ask for a secret of the forward's own (printed, and shown by --list; Basic with any user name and the secret as the password, or Bearer): for a computer several people log in to"),
			timeout: fs.String("timeout", "", "how long the app may take before its answer's head when a client says no X-Delta-Timeout, in seconds (at most 600); "+
				"without it, the owner app's own timeout (delta apps add --timeout on its computer), else no limit, as a client given the app's own URL would wait"),
		}
	},
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*forwardOpts)
		c, err := e.Client()
		if err != nil {
			return err
		}
		switch {
		case *opts.list:
			if len(args) != 0 || *opts.remove {
				return Exitf(ExitUsage, "forward --list takes nothing else")
			}
			fws, err := c.Forwards(e.Ctx)
			if err != nil {
				return apiExit("forward --list", e.DownErr(err))
			}
			if e.JSON {
				if fws == nil {
					fws = []localapi.Forward{}
				}
				return e.PrintJSON(map[string]any{"forwards": fws})
			}
			if len(fws) == 0 {
				fmt.Fprintln(e.Stdout, "no forwards (delta forward PEER/APP opens one)")
			}
			for _, f := range fws {
				fmt.Fprintln(e.Stdout, forwardLine(f))
			}
			return nil
		case *opts.remove:
			if len(args) != 1 {
				return Exitf(ExitUsage, "forward --remove takes PEER/APP, as in: delta forward --remove studio/notes")
			}
			peer, app, err := splitPeerApp(args[0])
			if err != nil {
				return err
			}
			if err := c.RemoveForward(e.Ctx, peer, app); err != nil {
				return apiExit("forward --remove", e.DownErr(err))
			}
			if !e.JSON {
				fmt.Fprintf(e.Stdout, "removed the forward to %s/%s\n", peer, app)
			}
			return nil
		}
		if len(args) < 1 || len(args) > 2 {
			return Exitf(ExitUsage, "forward takes PEER/APP [ADDR], as in: delta forward studio/notes (or 127.0.0.1:8080 for a port of your choice)")
		}
		peer, app, err := splitPeerApp(args[0])
		if err != nil {
			return err
		}
		addr := ""
		if len(args) == 2 {
			addr = args[1]
		}
		f, err := c.PutForward(e.Ctx, peer, app, localapi.ForwardRequest{Listen: addr, Token: *opts.token, Timeout: *opts.timeout})
		if err != nil {
			return apiExit("forward", e.DownErr(err))
		}
		if f.Warning != "" {
			fmt.Fprintf(e.Stderr, "delta: warning: %s\n", f.Warning)
		}
		if e.JSON {
			return e.PrintJSON(f)
		}
		fmt.Fprintln(e.Stdout, f.URL)
		if f.BrowserURL != "" {
			fmt.Fprintf(e.Stderr, "in a browser: %s (its own name: its cookies stay its own)\n", f.BrowserURL)
		}
		if f.Secret != "" {
			fmt.Fprintf(e.Stderr, "it asks for its own secret (not Delta's token): give the app %s\n", withSecret(f.URL, f.Secret))
		}
		return nil
	}}

// splitPeerApp reads PEER/APP.
func splitPeerApp(s string) (string, string, error) {
	peer, app, ok := strings.Cut(s, "/")
	if !ok || peer == "" || app == "" || strings.Contains(app, "/") {
		return "", "", Exitf(ExitUsage, "forward: %q is not PEER/APP, as in studio/notes", s)
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
		state += "\t(asks for its secret: " + withSecret(f.URL, f.Secret) + ")"
	}
	if f.Timeout != "" {
		state += "\ttimeout " + f.Timeout + " s"
	}
	if !f.Open {
		state = "not open: " + f.Error + " (delta forward " + f.Peer + "/" + f.App + " opens it again)"
	}
	return f.Peer + "/" + f.App + "\t" + state
}

// withSecret is a forward's URL with its secret as the password, as an app
// given only a URL sends it (any user name).
func withSecret(url, secret string) string {
	return strings.Replace(url, "http://", "http://delta:"+secret+"@", 1)
}
