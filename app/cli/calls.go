package cli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
	"github.com/delta-roads/delta/kit"
)

type callsOpts struct {
	unsettled *bool
	dismissed *bool
	state     *string
}

// callStates are the states --state takes (record.CallState).
var callStates = []string{"sending", "answered", "unavailable", "unknown", "carried_out", "not_carried_out", "needs_person"}

// callsCommand is `delta calls`.
var callsCommand = &Command{Name: "calls", Args: "[--unsettled | --dismissed | --state S]", Summary: "the calls this computer made, newest first", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return &callsOpts{unsettled: fs.Bool("unsettled", false, "only calls waiting to be settled (unknown, needs_person), not set aside"),
			dismissed: fs.Bool("dismissed", false, "only calls a person set aside (Delta still asks about them)"),
			state:     fs.String("state", "", "only calls in this state (sending, answered, unavailable, unknown, carried_out, not_carried_out, needs_person)")}
	},
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*callsOpts)
		if len(args) > 0 {
			return Exitf(ExitUsage, "calls: unexpected argument %q", args[0])
		}
		state := *opts.state
		if state != "" && !slices.Contains(callStates, state) {
			return Exitf(ExitUsage, "calls: --state %q is not a call's state (%s)", state, strings.Join(callStates, ", "))
		}
		for _, f := range []struct {
			on   bool
			name string
		}{{*opts.unsettled, "unsettled"}, {*opts.dismissed, "dismissed"}} {
			if !f.on {
				continue
			}
			if state != "" {
				return Exitf(ExitUsage, "calls: --%s and %s together: choose one", f.name, map[bool]string{true: "--" + state, false: "--state " + state}[state == "unsettled" || state == "dismissed"])
			}
			state = f.name
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		calls, err := c.Calls(e.Ctx, state)
		if err != nil {
			return e.DownErr(err)
		}
		if e.JSON {
			if calls == nil {
				calls = []localapi.Call{}
			}
			return e.PrintJSON(map[string]any{"calls": calls})
		}
		if len(calls) == 0 {
			if state == "unsettled" {
				// "no calls" must not hide the ones set aside.
				if aside, err := c.Calls(e.Ctx, "dismissed"); err == nil && len(aside) > 0 {
					fmt.Fprintf(e.Stdout, "no calls need you; %d set aside, outcome not known yet, still asked about (delta calls --dismissed)\n", len(aside))
					return nil
				}
			}
			fmt.Fprintln(e.Stdout, "no calls")
			return nil
		}
		tw := newTable(e.Stdout)
		fmt.Fprintln(tw, "REQUEST ID\tMADE\tSTATE\tBY\tTO\tREQUEST")
		for _, r := range calls {
			state := r.State
			if r.SettledBy != "" {
				state += " (by " + r.SettledBy + ")"
			}
			by := view.Clip(r.CallerApp, 32)
			if by == "" {
				by = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s on %s\t%s\n", r.RequestID, r.CreatedAt.Local().Format("Jan 2 15:04:05"), state, by, r.App, r.Peer, view.Request(r.GRPC, r.Method, r.Path, 50))
		}
		return tw.Flush()
	}}

// stateExit is the exit code that tells a call's state apart.
func stateExit(state string) int {
	switch state {
	case "answered", "carried_out":
		return ExitOK
	case "unavailable", "not_carried_out":
		return ExitUnavailable
	case "needs_person":
		return ExitNeedsPerson
	}
	return ExitUnknown // sending, unknown
}

// showRecord prints a call's record. With withState (show) it returns the
// exit code of the call's state (docs/protocol.md, "The command line's
// exit codes"); the bookkeeping commands (ask, dismiss, forget) exit 0
// once they did what was asked, whatever the call's state.
func showRecord(e *Env, r *localapi.Call, withState bool) error {
	if e.JSON {
		if err := e.PrintJSON(r); err != nil {
			return err
		}
	} else {
		writeRecord(e.Stdout, r, time.Now())
	}
	if code := stateExit(r.State); withState && code != ExitOK {
		return &ExitError{Code: code, Err: fmt.Errorf("call %s: %s", r.RequestID, callWords(r))}
	}
	return nil
}

// callWords says what a call's record says happened (view.CallWords).
func callWords(r *localapi.Call) string {
	at := make([]record.Attempt, len(r.Attempts))
	for i, a := range r.Attempts {
		at[i] = record.Attempt{N: a.N, FirstByte: a.FirstByte, Reply: a.Reply}
	}
	return view.CallWords(record.CallState(r.State), at)
}

func writeRecord(w io.Writer, r *localapi.Call, now time.Time) {
	named := &record.Call{CallerApp: r.CallerApp}
	if q := r.Request; q != nil {
		named.Request = &record.Request{Headers: q.Header}
	}
	from := view.AppName(named) // as the menu and the page name it
	fmt.Fprintf(w, "%s  %s → %s on %s: %s\n", r.RequestID, from, r.App, r.Peer, view.Request(r.GRPC, r.Method, r.Path, 1<<20))
	if words := callWords(r); words != r.State {
		fmt.Fprintf(w, "state:    %s (%s)", r.State, words)
	} else {
		fmt.Fprintf(w, "state:    %s", r.State)
	}
	if r.Outcome != "" {
		fmt.Fprintf(w, "; the app was told %s", r.Outcome)
	}
	fmt.Fprintln(w)
	if r.Detail != "" {
		fmt.Fprintf(w, "detail:   %s\n", r.Detail)
	}
	fmt.Fprintf(w, "made:     %s (%s ago)\n", r.CreatedAt.Local().Format("Mon 2 Jan 15:04:05 MST"), view.Ago(now.Sub(r.CreatedAt)))
	if r.OwnerState != "" || r.Asks > 0 {
		if r.OwnerState == "" {
			fmt.Fprintf(w, "owner:    has said nothing yet; asked %d×", r.Asks)
		} else {
			fmt.Fprintf(w, "owner:    last said %q; asked %d×", r.OwnerState, r.Asks)
		}
		if !r.NextAskAt.IsZero() && r.State == string(record.Unknown) {
			fmt.Fprintf(w, ", next at %s", r.NextAskAt.Local().Format("15:04:05"))
		}
		fmt.Fprintln(w)
	}
	if r.Dismissed {
		by := r.DismissedBy
		if by == "" {
			by = "a person"
		}
		if r.Waiting() {
			fmt.Fprintf(w, "set aside from %s; still asked about\n", by)
		} else {
			fmt.Fprintf(w, "set aside from %s before it was settled\n", by)
		}
	}
	fmt.Fprintf(w, "digest:   %s\n", r.Digest)
	writeKept(w, "carried: ", r.Request)
	if r.SettledBy != "" {
		fmt.Fprintf(w, "settled by %s", r.SettledBy)
		if r.SettleNote != "" {
			fmt.Fprintf(w, ": %q", r.SettleNote)
		}
		fmt.Fprintln(w)
	}
	for _, a := range r.Attempts {
		fmt.Fprintf(w, "attempt %d: %s %s at %s, first byte written: %t", a.N, a.Road, a.Address, a.StartedAt.Local().Format("15:04:05.000"), a.FirstByte)
		if a.Error != "" {
			fmt.Fprintf(w, "; %s", a.Error)
		}
		fmt.Fprintln(w)
	}
	if a := r.Answer; a != nil {
		fmt.Fprintf(w, "answer:   %d, %d bytes", a.Status, len(a.Body))
		if a.Omitted {
			fmt.Fprint(w, " (body not kept: too large)")
		}
		fmt.Fprintln(w)
	}
	if len(r.History) > 0 {
		fmt.Fprintln(w, "history:")
		for _, s := range r.History {
			fmt.Fprintf(w, "  %s  %s", s.At.Local().Format("15:04:05.000"), s.State)
			if s.OwnerState != "" {
				fmt.Fprintf(w, ", owner: %s", s.OwnerState)
			}
			if s.Dismissed {
				fmt.Fprint(w, ", set aside")
			}
			if s.Detail != "" {
				fmt.Fprintf(w, " — %s", s.Detail)
			}
			fmt.Fprintln(w)
		}
	}
}

// callArg is a command on one call: show, ask, dismiss.
func callArg(name, summary string, withState bool, do func(e *Env, c *kit.Client, id string) (*localapi.Call, error)) *Command {
	return &Command{Name: name, Args: "ID", Summary: summary, Reads: true,
		Run: func(e *Env, _ any, args []string) error {
			if len(args) != 1 {
				return Exitf(ExitUsage, "%s takes one request id: delta %s ID", name, name)
			}
			c, err := e.Client()
			if err != nil {
				return err
			}
			r, err := do(e, c, args[0])
			if err != nil {
				if ae, ok := err.(*kit.APIError); ok {
					code := ExitFailed
					switch ae.Outcome {
					case "not_found":
						code = ExitNotFound
					case "conflict": // the call's state does not allow it
						code = ExitNotNow
					}
					return &ExitError{Code: code, Err: fmt.Errorf("%s %s: %s", name, args[0], ae.Detail)}
				}
				return e.DownErr(err)
			}
			return showRecord(e, r, withState)
		}}
}

var (
	showCommand = callArg("show", "one call's record: its state, attempts and history (its exit code says the state)", true, func(e *Env, c *kit.Client, id string) (*localapi.Call, error) {
		return c.CallRecord(e.Ctx, id)
	})
	askCommand = callArg("ask", "ask the owner about an unsettled call now", false, func(e *Env, c *kit.Client, id string) (*localapi.Call, error) {
		return c.Ask(e.Ctx, id)
	})
	dismissCommand = callArg("dismiss", "set an unsettled call aside: hidden from the menu, still asked about", false, func(e *Env, c *kit.Client, id string) (*localapi.Call, error) {
		return c.Dismiss(e.Ctx, id)
	})
	forgetCommand = callArg("forget", "drop what a call sent (its kept headers and body) from the journal; its record stays", false, func(e *Env, c *kit.Client, id string) (*localapi.Call, error) {
		return c.Forget(e.Ctx, id)
	})
)

type settleOpts struct {
	carried, notCarried *bool
	note                *string
}

// settleCommand is `delta settle ID --carried-out|--not-carried-out`.
var settleCommand = &Command{Name: "settle", Args: "ID --carried-out|--not-carried-out [--note TEXT]", Summary: "say what happened to a call whose owner cannot tell: Delta stops asking", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return &settleOpts{carried: fs.Bool("carried-out", false, "it happened"), notCarried: fs.Bool("not-carried-out", false, "it did not happen"),
			note: fs.String("note", "", "what you saw, kept with the call")}
	},
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*settleOpts)
		if len(args) != 1 || *opts.carried == *opts.notCarried {
			return Exitf(ExitUsage, "settle takes one request id and one of --carried-out, --not-carried-out")
		}
		state := "carried_out"
		if *opts.notCarried {
			state = "not_carried_out"
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		r, err := c.Settle(e.Ctx, args[0], state, *opts.note)
		if err != nil {
			return apiExit("settle "+args[0], e.DownErr(err))
		}
		if e.JSON {
			return e.PrintJSON(r)
		}
		writeRecord(e.Stdout, r, time.Now())
		return nil
	}}

// writeKept writes what a call carried, as the journal keeps it, after
// label, in the words the menu uses (view.Excerpt).
func writeKept(w io.Writer, label string, q *localapi.SentRequest) {
	if q == nil {
		return
	}
	kept := &record.Request{Headers: q.Header, Body: q.Body, Size: q.Size, Truncated: q.Truncated, Forgotten: q.Forgotten}
	fmt.Fprintf(w, "%s %s\n", label, view.Excerpt(kept, 2000))
}

// writeReceipt writes one receipt for a person: what came, what the app
// did with it, what to do.
func writeReceipt(w io.Writer, r *localapi.Receipt, now time.Time) {
	from := r.Caller
	if r.CallerApp != "" {
		from += "'s " + view.Clip(r.CallerApp, 64)
	}
	fmt.Fprintf(w, "%s  %s → %s: %s %s\n", r.RequestID, from, r.App, r.Method, r.Path)
	fmt.Fprintf(w, "state:    %s (%s)\n", r.State, view.ReceivedWords(proto.ReceiptState(r.State), r.ToCheck))
	fmt.Fprintf(w, "received: %s (%s ago)\n", r.ReceivedAt.Local().Format("Mon 2 Jan 15:04:05 MST"), view.Ago(now.Sub(r.ReceivedAt)))
	if r.Digest != "" {
		fmt.Fprintf(w, "digest:   %s\n", r.Digest)
	}
	if r.Request == nil {
		fmt.Fprintln(w, "carried:  "+view.NotKept)
	} else {
		writeKept(w, "carried: ", r.Request)
		for _, k := range slices.Sorted(maps.Keys(r.Request.Header)) {
			fmt.Fprintf(w, "  %s: %s\n", k, strings.Join(r.Request.Header[k], ", "))
		}
	}
	if s := r.CallerSettled; s != nil {
		fmt.Fprintf(w, "a person on %s settled it: %s", r.Caller, view.SettledWords(s.State))
		if s.Note != "" {
			fmt.Fprintf(w, " (%q)", s.Note)
		}
		fmt.Fprintf(w, ", %s ago\n", view.Ago(now.Sub(s.At)))
	}
	if c := r.Checked; c != nil {
		fmt.Fprintf(w, "checked by a person here (%s)", c.By)
		if c.Note != "" {
			fmt.Fprintf(w, ": %q", c.Note)
		}
		fmt.Fprintf(w, ", %s ago\n", view.Ago(now.Sub(c.At)))
	}
	if r.ToCheck {
		fmt.Fprintf(w, "to check: look in %s whether it acted on this call, then: delta check-receipt %s [--note TEXT]\n", r.App, r.RequestID)
	}
}

type receiptsOpts struct{ state *string }

// receiptsCommand is `delta receipts`: what this computer's apps received.
var receiptsCommand = &Command{Name: "receipts", Args: "[--state S]", Summary: "the calls this computer's apps received in the last 7 days, those to check first at the top", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return &receiptsOpts{state: fs.String("state", "", "only this state (running, answered, not_carried_out, app_unknown, interrupted, fenced)")}
	},
	Run: func(e *Env, o any, args []string) error {
		if len(args) > 0 {
			return Exitf(ExitUsage, "receipts: unexpected argument %q", args[0])
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		recs, err := c.Receipts(e.Ctx, *o.(*receiptsOpts).state)
		if err != nil {
			return apiExit("receipts", e.DownErr(err))
		}
		if e.JSON {
			if recs == nil {
				recs = []localapi.Receipt{}
			}
			return e.PrintJSON(map[string]any{"receipts": recs})
		}
		if len(recs) == 0 {
			fmt.Fprintln(e.Stdout, "no calls received in the last 7 days")
			return nil
		}
		tw := newTable(e.Stdout)
		fmt.Fprintln(tw, "REQUEST ID\tRECEIVED\tSTATE\tFROM → APP\tREQUEST")
		for _, r := range recs {
			state := r.State
			switch {
			case r.ToCheck:
				state += " (to check)"
			case r.CallerSettled != nil:
				state += " (settled by a person on " + r.Caller + ")"
			case r.Checked != nil:
				state += " (checked)"
			}
			from := r.Caller
			if r.CallerApp != "" {
				from += "'s " + view.Clip(r.CallerApp, 32)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s → %s\t%s %s\n", r.RequestID, r.ReceivedAt.Local().Format("Jan 2 15:04:05"), state, from, r.App, r.Method, view.Clip(r.Path, 50))
		}
		return tw.Flush()
	}}

// showReceiptCommand is `delta show-receipt ID`: one received call, with
// what it carried.
var showReceiptCommand = &Command{Name: "show-receipt", Args: "ID", Summary: "one call this computer's apps received: what it carried, what the app did, whether a person checked it", Reads: true,
	Run: func(e *Env, _ any, args []string) error {
		if len(args) != 1 {
			return Exitf(ExitUsage, "show-receipt takes one request id (delta receipts lists them)")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		recs, err := c.Receipt(e.Ctx, args[0])
		if err != nil {
			return apiExit("show-receipt "+args[0], e.DownErr(err))
		}
		if e.JSON {
			return e.PrintJSON(map[string]any{"receipts": recs})
		}
		for i := range recs {
			if i > 0 {
				fmt.Fprintln(e.Stdout)
			}
			writeReceipt(e.Stdout, &recs[i], time.Now())
		}
		return nil
	}}

type checkReceiptOpts struct{ note, caller *string }

// checkReceiptCommand is `delta check-receipt ID`: a person here checked
// what the app did.
// forgetReceiptCommand is `delta forget-receipt ID`: what a received call
// carried, dropped (issue 34 U2).
var forgetReceiptCommand = &Command{Name: "forget-receipt", Args: "ID [--caller NAME]", Summary: "drop what a call this computer received carried (its kept headers and body); its receipt stays", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return fs.String("caller", "", "the calling computer, when two sent a call under this id")
	},
	Run: func(e *Env, o any, args []string) error {
		if len(args) != 1 {
			return Exitf(ExitUsage, "forget-receipt takes one request id (delta receipts lists them)")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		rs, err := c.ForgetReceived(e.Ctx, args[0], *o.(*string))
		if err != nil {
			return apiExit("forget-receipt "+args[0], e.DownErr(err))
		}
		if e.JSON {
			return e.PrintJSON(map[string]any{"receipts": rs})
		}
		fmt.Fprintf(e.Stdout, "forgot what received call %s carried; its receipt stays (delta receipts)\n", args[0])
		return nil
	}}

var checkReceiptCommand = &Command{Name: "check-receipt", Args: "ID [--note TEXT] [--caller NAME]", Summary: "say you checked what the app did with a call it received: it is no longer listed to check", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return &checkReceiptOpts{note: fs.String("note", "", "what you saw, kept with the receipt"),
			caller: fs.String("caller", "", "the calling computer, when two sent a call under this id")}
	},
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*checkReceiptOpts)
		if len(args) != 1 {
			return Exitf(ExitUsage, "check-receipt takes one request id (delta receipts lists them)")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		r, err := c.CheckReceipt(e.Ctx, args[0], *opts.caller, *opts.note)
		if err != nil {
			return apiExit("check-receipt "+args[0], e.DownErr(err))
		}
		if e.JSON {
			return e.PrintJSON(r)
		}
		writeReceipt(e.Stdout, r, time.Now())
		return nil
	}}
