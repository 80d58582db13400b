package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/kit"
)

// headerFlags is a repeatable -H "Name: value".
type headerFlags struct{ h http.Header }

func (f *headerFlags) String() string { return "" }
func (f *headerFlags) Set(v string) error {
	name, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q is not \"Name: value\"", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(strings.TrimSpace(name), strings.TrimSpace(val))
	return nil
}

// secondsFlag is --timeout S: seconds, as X-Delta-Timeout.
type secondsFlag struct{ d time.Duration }

func (f *secondsFlag) String() string {
	if f.d == 0 {
		return ""
	}
	return strconv.FormatFloat(f.d.Seconds(), 'f', -1, 64)
}
func (f *secondsFlag) Set(v string) error {
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 || s > 600 {
		return fmt.Errorf("%q is not a number of seconds from 0 to 600", v)
	}
	f.d = time.Duration(s * float64(time.Second))
	return nil
}

type requestOpts struct {
	header  headerFlags
	timeout secondsFlag
	route   *string
	// reads only
	fresh *bool
	// calls only
	method *string
	data   *string
	id     *string
	app    *string
	settle *bool
}

func requestFlags(fs *flag.FlagSet, call bool) *requestOpts {
	o := &requestOpts{}
	fs.Var(&o.header, "H", "a request header, \"Name: value\" (repeatable)")
	fs.Var(&o.timeout, "timeout", "how long the owner may take, in seconds (default 30)")
	o.route = fs.String("route", "", "pin the road: thunderbolt, lan or tailnet")
	if !call {
		o.fresh = fs.Bool("fresh", false, "the owner's answer or none: never a stale one from the cache (sends Cache-Control: no-cache)")
	}
	if call {
		o.method = fs.String("X", "POST", "the method: any that is not a read (POST, PUT, PATCH, DELETE, MOVE, COPY, MKCOL, LOCK, …)")
		o.data = fs.String("data", "", "the body: text, @FILE, or - for standard input")
		o.id = fs.String("id", "", "the request id (default: a new UUID, printed)")
		o.app = fs.String("app", "delta", "the calling app's name, shown to the owner and in calls, the menu and the page (X-Delta-App)")
		o.settle = fs.Bool("settle", false, "when the outcome is unknown, wait until Delta settles it")
	}
	return o
}

// AnswerJSON is --json's form of an answer or a refusal.
type AnswerJSON struct {
	Outcome     string      `json:"outcome"`
	Status      int         `json:"status,omitempty"`
	RequestID   string      `json:"request_id,omitempty"`
	Road        string      `json:"road,omitempty"`
	Replayed    bool        `json:"replayed,omitempty"`
	Stale       bool        `json:"stale,omitempty"`
	Direct      bool        `json:"direct,omitempty"`
	StaleReason string      `json:"stale_reason,omitempty"`
	Headers     http.Header `json:"headers,omitempty"`
	Body        *string     `json:"body,omitempty"`
	BodyBase64  string      `json:"body_base64,omitempty"`
	Detail      string      `json:"detail,omitempty"`
	// Settled is the call's record after --settle.
	Settled *localapi.Call `json:"settled,omitempty"`
}

func bodyJSON(v *AnswerJSON, b []byte) {
	if utf8.Valid(b) {
		s := string(b)
		v.Body = &s
	} else {
		v.BodyBase64 = base64.StdEncoding.EncodeToString(b)
	}
}

// getCommand is `delta get PEER APP PATH`.
var getCommand = &Command{Name: "get", Args: "PEER APP PATH", Summary: "read PATH from APP on PEER (GET), and print the answer's body", Reads: true,
	Flags: func(fs *flag.FlagSet) any { return requestFlags(fs, false) },
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*requestOpts)
		if len(args) != 3 {
			return Exitf(ExitUsage, "get takes PEER APP PATH, as in: delta get studio notes /notes")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		ro := &kit.ReadOptions{Route: *opts.route, Timeout: opts.timeout.d, Header: opts.header.h}
		if *opts.fresh {
			if ro.Header == nil {
				ro.Header = http.Header{}
			}
			ro.Header.Set("Cache-Control", "no-cache")
		}
		if e.JSON {
			// The body goes inside the JSON: held whole.
			ans, err := c.Get(e.Ctx, args[0], args[1], args[2], ro)
			return e.answer(ans, err, "", false)
		}
		bar := newProgress(e.Stderr, args[0]+" "+args[1]+args[2])
		ro.Progress = bar.report
		r, err := c.Stream(e.Ctx, args[0], args[1], args[2], ro)
		if err != nil {
			return e.answer(nil, err, "", false)
		}
		defer r.Body.Close()
		if r.Stale {
			fmt.Fprintf(e.Stderr, "delta: a stale answer (%s)\n", r.StaleReason)
		}
		if r.Direct {
			fmt.Fprintf(e.Stderr, "delta: this computer's Delta is down; the read went directly to %s over %s, with the read ticket Delta left\n", args[0], r.Road)
		}
		// The body streams to standard output as it arrives: nothing is
		// held whole.
		out := &lastByte{w: e.Stdout}
		_, err = io.Copy(out, r.Body)
		bar.finish()
		finishLine(e.Stdout, out)
		var cut *kit.Cut
		switch {
		case errors.As(err, &cut):
			return Exitf(ExitCut, "%v", cut)
		case err != nil:
			return Exitf(ExitFailed, "could not write the answer: %v", err)
		case r.Status >= 400:
			return Exitf(ExitAppError, "the owner app answered %d %s", r.Status, http.StatusText(r.Status))
		case r.Stale:
			return Exitf(ExitStale, "the answer printed is a stale one from this computer's cache: %s could not be reached (--fresh refuses it)", args[0])
		}
		return nil
	}}

// callCommand is `delta call PEER APP PATH`.
var callCommand = &Command{Name: "call", Args: "PEER APP PATH [--data @FILE|-] [--id ID]", Summary: "send a call (a write) to APP on PEER at most once, and print the answer's body", Reads: true,
	Flags: func(fs *flag.FlagSet) any { return requestFlags(fs, true) },
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*requestOpts)
		if len(args) != 3 {
			return Exitf(ExitUsage, "call takes PEER APP PATH, as in: delta call studio notes /notes --data '{\"text\":\"hi\"}'")
		}
		method := strings.ToUpper(*opts.method)
		switch method {
		case "GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT", "SEARCH", "QUERY":
			return Exitf(ExitUsage, "call: -X %s is a read (a safe method); reads go through delta get, or any client through delta forward", *opts.method)
		case "CONNECT", "TRACE", "":
			return Exitf(ExitUsage, "call: -X %q is not a method Delta carries", *opts.method)
		}
		body, size, closeData, err := openData(*opts.data)
		if err != nil {
			return Exitf(ExitUsage, "call: --data: %v", err)
		}
		defer closeData()
		c, err := e.Client()
		if err != nil {
			return err
		}
		c.App = *opts.app
		id := *opts.id
		if id == "" {
			id = kit.NewRequestID()
		}
		bar := newProgress(e.Stderr, "to "+args[0]+" "+args[1]+args[2])
		bar.call = true
		ans, err := c.CallStream(e.Ctx, args[0], args[1], method, args[2], body, size,
			&kit.CallOptions{RequestID: id, Route: *opts.route, Timeout: opts.timeout.d, Header: opts.header.h, Progress: bar.report})
		bar.finish()
		return e.answer(ans, err, id, *opts.settle)
	}}

// openData opens --data: text, @FILE (streamed, never read whole), or -
// for standard input (streamed, of unknown length). It returns the body,
// its size (-1 if unknown) and what closes it.
func openData(v string) (io.Reader, int64, func(), error) {
	switch {
	case v == "":
		return nil, 0, func() {}, nil
	case v == "-":
		return os.Stdin, -1, func() {}, nil
	case strings.HasPrefix(v, "@"):
		f, err := os.Open(v[1:])
		if err != nil {
			return nil, 0, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, nil, err
		}
		size := fi.Size()
		if !fi.Mode().IsRegular() {
			size = -1
		}
		return f, size, func() { f.Close() }, nil
	}
	return strings.NewReader(v), int64(len(v)), func() {}, nil
}

// answer prints a read's or a call's result and returns the exit code of
// its outcome.
func (e *Env) answer(ans *kit.Answer, err error, id string, settle bool) error {
	var (
		un   *kit.Unavailable
		unk  *kit.OutcomeUnknown
		cf   *kit.Conflict
		down *kit.DeltaDown
	)
	v := AnswerJSON{RequestID: id}
	var code int
	var msg string
	switch {
	case err == nil:
		v.Outcome, v.Status, v.Road, v.Replayed, v.Headers = "answered", ans.Status, ans.Road, ans.Replayed, ans.Header
		v.Stale, v.StaleReason, v.Direct = ans.Stale, ans.StaleReason, ans.Direct
		if ans.Stale {
			v.Outcome = "stale"
		}
		if ans.RequestID != "" {
			v.RequestID = ans.RequestID
		}
		bodyJSON(&v, ans.Body)
		switch {
		case ans.Status >= 400:
			code, msg = ExitAppError, fmt.Sprintf("the owner app answered %d %s", ans.Status, http.StatusText(ans.Status))
		case ans.Stale:
			code, msg = ExitStale, "a stale answer from this computer's cache (--fresh refuses it)"
		}
	case errors.As(err, &un):
		v.Outcome, v.Status, v.Detail = un.Outcome, un.Status, un.Detail
		code, msg = ExitUnavailable, un.Outcome+": "+un.Detail
	case errors.As(err, &unk):
		v.Outcome, v.Detail = "outcome_unknown", unk.Detail
		// Delta's detail says already that it is never sent again and
		// who is asked; the command adds only where to look.
		code, msg = ExitUnknown, fmt.Sprintf("outcome unknown: %s (delta show %s)", unk.Detail, v.RequestID)
	case errors.As(err, &cf):
		v.Outcome, v.Detail = "conflict", cf.Detail
		code, msg = ExitConflict, "conflict: "+cf.Detail
	case errors.As(err, &down):
		return e.DownErr(err)
	default:
		return err
	}
	if settle && code == ExitUnknown {
		fmt.Fprintf(e.Stderr, "delta: request id %s: outcome unknown; waiting until Delta settles it (Ctrl-C stops waiting, not Delta)\n", v.RequestID)
		c, cerr := e.Client()
		if cerr != nil {
			return cerr
		}
		rec, serr := c.WaitSettled(e.Ctx, v.RequestID)
		if serr != nil {
			return Exitf(ExitUnknown, "request id %s: outcome still unknown: %v", v.RequestID, serr)
		}
		v.Settled = rec
		code, msg = stateExit(rec.State), fmt.Sprintf("settled %s: %s", rec.State, rec.Detail)
		if rec.Answer != nil {
			bodyJSON(&v, rec.Answer.Body)
			v.Status = rec.Answer.Status
			if code == ExitOK && rec.Answer.Status >= 400 {
				code = ExitAppError
			}
		}
	}
	if e.JSON {
		if err := e.PrintJSON(v); err != nil {
			return err
		}
	} else {
		out := &lastByte{w: e.Stdout}
		if v.Body != nil {
			fmt.Fprint(out, *v.Body)
		} else if v.BodyBase64 != "" {
			b, _ := base64.StdEncoding.DecodeString(v.BodyBase64)
			out.Write(b)
		}
		finishLine(e.Stdout, out)
		if v.Stale {
			fmt.Fprintf(e.Stderr, "delta: a stale answer (%s)\n", v.StaleReason)
		}
		if id != "" && code == ExitOK {
			how := fmt.Sprintf("answered %d via %s", v.Status, v.Road)
			if v.Replayed {
				how += ", replayed from the journal (nothing sent again)"
			}
			if v.Settled != nil {
				how = "settled " + v.Settled.State
			}
			fmt.Fprintf(e.Stderr, "delta: request id %s: %s\n", v.RequestID, how)
		}
	}
	if code != ExitOK {
		if id != "" {
			msg = "request id " + v.RequestID + ": " + msg
		}
		return &ExitError{Code: code, Err: errors.New(msg)}
	}
	return nil
}

// appsCommand is `delta apps add|list|remove`.
var appsCommand = &Command{Name: "apps", Args: "list [PEER] | suggest | add NAME URL [--timeout SECONDS|none] [--h2c] | remove NAME", Summary: "the apps this computer shares (or PEER shares with it)", Reads: true,
	Flags: func(fs *flag.FlagSet) any {
		return &appsOpts{timeout: fs.String("timeout", "", "with add: how long the app may take before its answer's head when a request says no X-Delta-Timeout, "+
			"in seconds (at most 600), or none for no limit; without it the caller's default applies (30 s on the local API, no limit through a forward)"),
			h2c: fs.Bool("h2c", false, "with add: the app speaks HTTP/2 with prior knowledge (h2c), and Delta speaks it to the app for every request; gRPC's go in HTTP/2 without it")}
	},
	Run: func(e *Env, o any, args []string) error {
		opts := o.(*appsOpts)
		timeout := *opts.timeout
		if len(args) == 0 {
			args = []string{"list"}
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		switch {
		case args[0] == "list" && len(args) == 1:
			apps, err := c.Apps(e.Ctx)
			if err != nil {
				return e.DownErr(err)
			}
			if e.JSON {
				if apps == nil {
					apps = []localapi.App{}
				}
				return e.PrintJSON(map[string]any{"apps": apps})
			}
			if len(apps) == 0 {
				fmt.Fprintln(e.Stdout, "no apps registered (delta apps add NAME http://127.0.0.1:PORT)")
			}
			for _, a := range apps {
				fmt.Fprintf(e.Stdout, "%s\t%s\t%s\n", a.App, a.URL, appTerms(a))
			}
			return nil
		case args[0] == "list" && len(args) == 2:
			apps, err := c.PeerApps(e.Ctx, args[1])
			if err != nil {
				return apiExit("apps list", e.DownErr(err))
			}
			if e.JSON {
				return e.PrintJSON(localapi.PeerApps{Peer: args[1], Apps: apps})
			}
			if len(apps) == 0 {
				fmt.Fprintf(e.Stdout, "%s shares no apps with this computer\n", args[1])
			}
			for _, a := range apps {
				url := "no forward here (delta forward " + args[1] + "/" + a.App + " opens one)"
				if a.Forward != nil {
					url = a.Forward.URL
				}
				fmt.Fprintf(e.Stdout, "%s\t%s\n", a.App, url)
			}
			return nil
		case args[0] == "add" && len(args) == 3:
			var was *localapi.App
			if apps, err := c.Apps(e.Ctx); err == nil {
				for i := range apps {
					if apps[i].App == args[1] {
						was = &apps[i]
					}
				}
			}
			a, err := c.PutApp(e.Ctx, args[1], localapi.AppRequest{URL: args[2], Timeout: timeout, H2C: *opts.h2c})
			if err != nil {
				return apiExit("apps add", e.DownErr(err))
			}
			if was != nil && (was.URL != a.URL || was.Timeout != a.Timeout || was.H2C != a.H2C) {
				fmt.Fprintf(e.Stderr, "delta: replaced app %s: it was %s, %s\n", a.App, was.URL, appTerms(*was))
			}
			if where := servesStateFolder(e.Ctx, a.URL, e.StateDir); where != "" {
				fmt.Fprintf(e.Stderr, "delta: warning: app %s serves this Delta's own local token at %s: it serves a folder that holds Delta's state folder (%s), so every peer that may use it can read Delta's secrets. Serve a folder of its own.\n", a.App, where, e.StateDir)
			}
			if e.JSON {
				return e.PrintJSON(a)
			}
			fmt.Fprintf(e.Stdout, "%s\t%s\t%s\nforward secret: %s\n  (optional: Delta sends it as X-Delta-Forward-Secret with every request it forwards; an app that checks it refuses requests that did not come through Delta, from other programs on this computer. kit.Owner, DeltaOwner and ownerHandler check it; an app that does not still works.)\n",
				a.App, a.URL, appTerms(*a), a.Secret)
			return nil
		case args[0] == "suggest" && len(args) == 1:
			ports, err := c.Listening(e.Ctx)
			if err != nil {
				return apiExit("apps suggest", e.DownErr(err))
			}
			if e.JSON {
				return e.PrintJSON(map[string]any{"ports": ports})
			}
			if len(ports) == 0 {
				fmt.Fprintln(e.Stdout, "no program listens on a port this Delta could share (loopback, or every address)")
			}
			for _, p := range ports {
				name, shared := p.Program, ""
				if name == "" {
					name = "(the OS did not say which program)"
				}
				if p.App != "" {
					shared = "\tshared as " + p.App
				}
				fmt.Fprintf(e.Stdout, "%s\t%s%s\n", name, p.URL, shared)
			}
			return nil
		case args[0] == "remove" && len(args) == 2:
			if err := c.RemoveApp(e.Ctx, args[1]); err != nil {
				return apiExit("apps remove", e.DownErr(err))
			}
			if !e.JSON {
				fmt.Fprintf(e.Stdout, "removed %s\n", args[1])
			}
			return nil
		}
		return Exitf(ExitUsage, "apps takes: list [PEER] | suggest | add NAME URL [--timeout SECONDS|none] [--h2c] | remove NAME")
	}}

// appsOpts are delta apps' flags.
type appsOpts struct {
	timeout *string
	h2c     *bool
}

// appTerms says an app's own timeout and protocol as delta apps prints
// them.
func appTerms(a localapi.App) string {
	if a.H2C {
		return appTimeout(a.Timeout) + ", HTTP/2 (h2c)"
	}
	return appTimeout(a.Timeout)
}

// appTimeout says an app's own timeout (localapi.App.Timeout) as delta
// apps prints it.
func appTimeout(t string) string {
	switch t {
	case "":
		return "timeout: the caller's (30 s on the local API, none through a forward)"
	case "none":
		return "timeout: none"
	}
	return "timeout " + t + " s"
}

// apiExit gives a refusal of Delta's API its exit code.
func apiExit(what string, err error) error {
	var ae *kit.APIError
	if errors.As(err, &ae) {
		code := ExitFailed
		switch ae.Outcome {
		case "not_found":
			code = ExitNotFound
		case "bad_request":
			code = ExitUsage
		case "conflict": // the local API's conflicts are a call's state
			code = ExitNotNow
		}
		return &ExitError{Code: code, Err: fmt.Errorf("%s: %s", what, ae.Detail)}
	}
	return err
}

// lastByte remembers the last byte written through it.
type lastByte struct {
	w    io.Writer
	n    int64
	last byte
}

func (l *lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.n += int64(n)
		l.last = p[n-1]
	}
	return n, err
}

// finishLine ends an answer printed to a terminal with a newline when it
// has none (the shell's prompt would follow on its last line); into a pipe
// or a file the bytes are the answer's, exactly.
func finishLine(stdout io.Writer, l *lastByte) {
	if NeedsNewline(IsTerminal(stdout), l.n, l.last) {
		io.WriteString(stdout, "\n")
	}
}

// NeedsNewline is finishLine's rule.
func NeedsNewline(terminal bool, written int64, last byte) bool {
	return terminal && written > 0 && last != '\n'
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// servesStateFolder reports where the app at appURL serves this state
// folder's local token, or "": a file server pointed at the state folder
// or at its parent (python3 -m http.server in /tmp, beside /tmp/beta)
// would hand Delta's secrets to every peer that may use the app (issue
// 65). It asks only GETs, on loopback, and compares what came with the
// token; an app that answers otherwise, or not at once, says nothing.
func servesStateFolder(ctx context.Context, appURL, stateDir string) string {
	tok, err := os.ReadFile(filepath.Join(stateDir, "local-token"))
	if err != nil || len(bytes.TrimSpace(tok)) == 0 {
		return ""
	}
	hc := &http.Client{Timeout: 2 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/local-token", "/" + url.PathEscape(filepath.Base(stateDir)) + "/local-token"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(appURL, "/")+p, nil)
		if err != nil {
			return ""
		}
		resp, err := hc.Do(req)
		if err != nil {
			return ""
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(tok)) {
			return strings.TrimSuffix(appURL, "/") + p
		}
	}
	return ""
}
