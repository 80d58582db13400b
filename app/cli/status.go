package cli

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/view"
	"github.com/delta-roads/delta/kit"
)

// unsettledWords says how many unsettled writes need a person and how
// many Delta is still asking about, never "the rest" when there is none.
func unsettledWords(unsettled, needsYou int) string {
	switch {
	case needsYou == unsettled && needsYou == 1:
		return "1, and it needs you"
	case needsYou == unsettled:
		return fmt.Sprintf("%d, and all need you", needsYou)
	case needsYou == 1:
		return fmt.Sprintf("%d: 1 needs you, Delta is asking about the other %d", unsettled, unsettled-1)
	}
	return fmt.Sprintf("%d: %d need you, Delta is asking about the other %d", unsettled, needsYou, unsettled-needsYou)
}

// statusCommand is `delta status`, like `tailscale status`.
var statusCommand = &Command{Name: "status", Summary: "this computer, the tailnet, every peer with its roads, and the unsettled writes", Reads: true,
	Run: func(e *Env, _ any, args []string) error {
		if len(args) > 0 {
			return Exitf(ExitUsage, "status: unexpected argument %q", args[0])
		}
		crashed := ""
		if at, path := LastCrash(e.StateDir); !at.IsZero() {
			crashed = fmt.Sprintf("last crash: %s (%s ago), its traceback in %s (delta bugreport bundles it)\n",
				at.Local().Format("Mon 2 Jan 15:04:05"), view.Ago(time.Since(at)), path)
		}
		c, err := e.Client()
		if err == nil {
			var st *localapi.Status
			if st, err = c.Status(e.Ctx); err == nil {
				if e.JSON {
					return e.PrintJSON(st)
				}
				writeStatus(e.Stdout, st, time.Now())
				fmt.Fprint(e.Stdout, crashed)
				return nil
			}
			err = e.DownErr(err)
		}
		fmt.Fprint(e.Stderr, crashed) // most wanted when Delta is down
		return err
	}}

// writeStatus prints st for people.
func writeStatus(w io.Writer, st *localapi.Status, now time.Time) {
	fmt.Fprintf(w, "%s", st.Self.Name)
	if st.Self.ID != "" {
		fmt.Fprintf(w, " (ID %s)", st.Self.ID)
	} else if st.Self.Node != "" {
		fmt.Fprintf(w, " (node %s)", st.Self.Node)
	}
	fmt.Fprintf(w, " · Delta %s\n", st.Version)
	if t := st.Tailnet; t != nil {
		fmt.Fprintf(w, "tailnet: %s", t.State)
		if t.ControlURL != "" {
			fmt.Fprintf(w, " · control server %s", t.ControlURL)
		}
		fmt.Fprintln(w)
		if t.LoginURL != "" {
			fmt.Fprintf(w, "  log in: %s  (or: delta login)\n", t.LoginURL)
		}
		if t.Message != "" {
			fmt.Fprintf(w, "  %s\n", t.Message)
		}
	} else {
		fmt.Fprintln(w, "static mode: peers from config.json; no tailnet")
	}
	if len(st.Peers) == 0 {
		fmt.Fprintln(w, "no peers yet")
	}
	tw := newTable(w)
	for _, p := range st.Peers {
		road := "no road up"
		if p.Road != "" {
			road = "via " + p.Road
			for _, r := range p.Roads {
				if r.Road == p.Road && r.RTTMillis > 0 {
					road += " " + view.FormatMillis(r.RTTMillis)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t\n", p.Name, road)
		for _, r := range p.Roads {
			where := r.Address
			if r.Interface != "" {
				where += " on " + r.Interface
			}
			state := string(r.State)
			if r.RTTMillis > 0 && r.State == localapi.RoadUp {
				state += " " + view.FormatMillis(r.RTTMillis)
			}
			var notes []string
			if r.Path != "" {
				notes = append(notes, r.Path)
			}
			if !r.HeldDownUntil.IsZero() && r.HeldDownUntil.After(now) {
				notes = append(notes, "held down until "+r.HeldDownUntil.Local().Format("15:04:05"))
			}
			if r.LastError != "" && r.State != localapi.RoadUp && r.LastError != r.DroppedWhy {
				e := view.ClipWords(r.LastError, 240)
				if !r.LastErrorAt.IsZero() {
					e = fmt.Sprintf("%s ago: %s", view.Ago(now.Sub(r.LastErrorAt)), e)
				}
				notes = append(notes, e)
			}
			if r.DroppedWhy != "" {
				// Shown up or down: a road dropped and back since is
				// still news (docs/design.md §2c).
				notes = append(notes, fmt.Sprintf("last dropped %s ago (%s): %s", view.Ago(now.Sub(r.DroppedAt)),
					r.DroppedAt.Local().Format("15:04:05"), view.ClipWords(r.DroppedWhy, 240)))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Road, where, state, strings.Join(notes, "; "))
		}
	}
	tw.Flush()
	for _, n := range st.Nearby {
		who := n.ID
		if n.Name != "" {
			who = n.Name + " " + n.ID
		}
		fmt.Fprintf(w, "nearby, not paired: %s at %s (%s); to pair: %s\n", who, n.Address, n.Road, n.Pair)
	}
	switch {
	case st.Unsettled > 0 && st.NeedsYou > 0:
		fmt.Fprintln(w, "unsettled writes: "+unsettledWords(st.Unsettled, st.NeedsYou)+" (delta calls --unsettled)")
	case st.Unsettled > 0:
		fmt.Fprintf(w, "unsettled writes: %d, Delta is asking their owners; nothing needs you (delta calls --unsettled)\n", st.Unsettled)
	case st.Dismissed > 0:
		fmt.Fprintln(w, "unsettled writes: none that needs you")
	default:
		fmt.Fprintln(w, "unsettled writes: none")
	}
	if st.Dismissed > 0 {
		fmt.Fprintf(w, "set aside: %d, outcome not known yet, still asked about (delta calls --dismissed)\n", st.Dismissed)
	}
	if st.ReceivedToCheck > 0 {
		fmt.Fprintf(w, "received calls to check: %d (delta receipts; each says what it carried)\n", st.ReceivedToCheck)
	}
	if len(st.Forwards) > 0 {
		fmt.Fprintln(w, "forwards (delta forward --list):")
		for _, f := range st.Forwards {
			fmt.Fprintf(w, "  %s\n", forwardLine(f))
		}
	}
	if len(st.Transfers) > 0 || st.Sessions > 0 {
		fmt.Fprintf(w, "transfers: %d running a second or more, %d session%s open\n", len(st.Transfers), st.Sessions, map[bool]string{true: "s"}[st.Sessions != 1])
		for _, x := range st.Transfers {
			fmt.Fprintf(w, "  %s (%s)\n", view.TransferLine(x, now), x.Peer)
		}
	}
}

// pingCommand is `delta ping PEER`, like `tailscale ping`.
var pingCommand = &Command{Name: "ping", Args: "PEER", Summary: "each road's round trip to PEER's Delta, or why not", Reads: true,
	Run: func(e *Env, _ any, args []string) error {
		if len(args) != 1 {
			return Exitf(ExitUsage, "ping takes one peer: delta ping PEER")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		res, err := c.Ping(e.Ctx, args[0])
		if err != nil {
			if ae, ok := err.(*kit.APIError); ok && ae.Outcome == "not_found" {
				return Exitf(ExitNotFound, "ping: %s", ae.Detail)
			}
			return e.DownErr(err)
		}
		ok := false
		for _, r := range res {
			ok = ok || r.OK
		}
		if e.JSON {
			if err := e.PrintJSON(map[string]any{"peer": args[0], "roads": res}); err != nil {
				return err
			}
		} else {
			for _, r := range res {
				where := r.Address
				if r.Interface != "" {
					where += " on " + r.Interface
				}
				if r.OK {
					fmt.Fprintf(e.Stdout, "%s via %s (%s): connect %s, answer %s\n", args[0], r.Road, where,
						view.FormatMillis(r.ConnectMillis), view.FormatMillis(r.AnswerMillis))
				} else {
					fmt.Fprintf(e.Stdout, "%s via %s (%s): %s\n", args[0], r.Road, where, r.Error)
				}
			}
		}
		if !ok {
			return Exitf(ExitUnavailable, "ping: no road to %s answered", args[0])
		}
		return nil
	}}

type loginOpts struct{ timeout *time.Duration }

// noURLAfter is how long login waits for a login URL before it says why
// none came.
const noURLAfter = 10 * time.Second

// loginCommand is `delta login`, like `tailscale up`.
var loginCommand = &Command{Name: "login", Summary: "print the tailnet's login URL and wait until logged in",
	Flags: func(fs *flag.FlagSet) any {
		return &loginOpts{timeout: fs.Duration("timeout", 10*time.Minute, "how long to wait for the login")}
	},
	Run: func(e *Env, o any, args []string) error {
		if len(args) > 0 {
			return Exitf(ExitUsage, "login: unexpected argument %q", args[0])
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		start := time.Now()
		deadline := start.Add(*o.(*loginOpts).timeout)
		shownURL, saidWhy := "", false
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			st, err := c.Status(e.Ctx)
			if err != nil {
				return e.DownErr(err)
			}
			t := st.Tailnet
			switch {
			case t == nil:
				fmt.Fprintln(e.Stdout, "static mode: peers come from config.json, and there is no tailnet to log in to")
				return nil
			case t.State == "Running":
				fmt.Fprintf(e.Stdout, "logged in: %s is on the tailnet\n", st.Self.Name)
				return nil
			case t.LoginURL != "" && t.LoginURL != shownURL:
				shownURL = t.LoginURL
				fmt.Fprintf(e.Stdout, "To log in, open:\n\n\t%s\n\nwaiting…\n", t.LoginURL)
			case shownURL == "" && !saidWhy && time.Since(start) > noURLAfter:
				saidWhy = true
				fmt.Fprintf(e.Stderr, "delta login: no login URL after %s from the control server %s: %s\n",
					noURLAfter, t.ControlURL, t.Message)
			}
			if time.Now().After(deadline) {
				why := t.Message
				if why == "" {
					why = "state " + t.State
				}
				return Exitf(ExitFailed, "login: not logged in after %s (%s)", *o.(*loginOpts).timeout, why)
			}
			select {
			case <-e.Ctx.Done():
				return e.Ctx.Err()
			case <-tick.C:
			}
		}
	}}

// newTable is a tabwriter for the command line's tables, whose lines
// end without the padding of empty last columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimWriter{w: w}, 0, 4, 2, ' ', 0)
}

// trimWriter writes whole lines to w without their trailing spaces.
type trimWriter struct {
	w    io.Writer
	line []byte
}

func (t *trimWriter) Write(p []byte) (int, error) {
	t.line = append(t.line, p...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := t.w.Write(append(bytes.TrimRight(t.line[:i], " "), '\n')); err != nil {
			return 0, err
		}
		t.line = t.line[i+1:]
	}
}
