package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/delta-roads/delta/gateway/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/kit"
)

// Exit codes: the outcome, for scripts (docs/protocol.md, "The command
// line's exit codes", and docs/guide.md).
const (
	exitOK          = 0 // done; a read or call answered with a 2xx status
	exitFailed      = 1 // failed for another reason: the message names it
	exitUsage       = 2 // the command line is wrong
	exitDeltaDown   = 3 // this computer's Delta is not running
	exitUnavailable = 4 // not carried out: nothing was sent, or the owner proved it did not act
	exitUnknown     = 5 // outcome unknown: the call left and no answer came (Delta reconciles it)
	exitConflict    = 6 // the request id is in use for another request
	exitAppError    = 7 // the owner app answered with an HTTP error status (4xx, 5xx)
	exitNeedsPerson = 8 // the call needs a person: its owner cannot say whether it was carried out
	exitCut         = 9 // the answer broke off on its way and could not be continued: what was printed is not the whole
	// exitNotNow: the call is in a state that does not allow it (ask or
	// settle a settled call, set aside one that needs a person).
	exitNotNow = 10
	// exitStale: a read answered from this computer's cache because the
	// peer could not be reached (the answer was printed, labelled stale).
	exitStale = 11
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// command is one subcommand of delta.
type command struct {
	name, args, summary string
	// flags adds the command's own flags to fs (beside --state-dir and,
	// for those that read, --json).
	flags func(fs *flag.FlagSet) any
	// reads: the command has --json.
	reads bool
	run   func(e *env, opts any, args []string) error
}

// env is what a command runs with.
type env struct {
	ctx      context.Context
	stdout   io.Writer
	stderr   io.Writer
	stateDir string
	json     bool
}

// client opens the kit's client of the running Delta.
func (e *env) client() (*kit.Client, error) {
	c, err := kit.Open(e.stateDir)
	if err != nil {
		return nil, e.downErr(err)
	}
	c.App = "delta" // the command line names itself, not Go's client; call --app names another
	return c, nil
}

// downErr gives a *kit.LocalDeltaDown its exit code and a hint.
func (e *env) downErr(err error) error {
	var down *kit.LocalDeltaDown
	if errors.As(err, &down) {
		return &exitError{code: exitDeltaDown, err: fmt.Errorf("%w (start it with `delta`, or `make run`; --state-dir names another folder)", err)}
	}
	return err
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

var commands []*command

func init() {
	commands = []*command{
		{name: "run", summary: "run Delta (the default when no command is given)"},
		statusCommand, pingCommand, loginCommand,
		callsCommand, showCommand, askCommand, dismissCommand, settleCommand, forgetCommand, receiptsCommand, showReceiptCommand, checkReceiptCommand, forgetReceiptCommand,
		getCommand, callCommand, appsCommand, forwardCommand,
		openCommand, versionCommand, demoCommand, initCommand, idCommand, pairCommandDef, uninstallCommand, bugreportCommand,
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// cli runs delta's command line and returns the exit code.
func cli(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, "delta:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	name, rest, err := findCommand(withoutPSN(runtime.GOOS, args))
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if name == "help" {
		usage(stdout) // asked for: it is the answer, on stdout (delta -h | less)
		return nil
	}
	if name == "" || name == "run" {
		if err := run(rest, stderr); err != nil {
			var ee *exitError
			if errors.As(err, &ee) || errors.Is(err, flag.ErrHelp) {
				return err
			}
			if errors.Is(err, errUsage) {
				return &exitError{code: exitUsage, err: err}
			}
			return err
		}
		return nil
	}
	cmd := lookup(name)
	fs := flag.NewFlagSet("delta "+name, flag.ContinueOnError)
	e := &env{stdout: stdout, stderr: stderr}
	fs.StringVar(&e.stateDir, "state-dir", localapi.DefaultStateDir(), "the running Delta's state folder (DELTA_STATE_DIR)")
	if cmd.reads {
		fs.BoolVar(&e.json, "json", false, "print JSON")
	}
	var opts any
	if cmd.flags != nil {
		opts = cmd.flags(fs)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\n%s.\n\nflags:\n", strings.TrimSpace("usage: delta "+cmd.name+" "+cmd.args), cmd.summary)
		fs.PrintDefaults()
	}
	var pos []string
	if err := quietParse(fs, stderr, usage, func() (err error) {
		pos, err = parseInterspersed(fs, rest)
		return err
	}); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("%s (see delta %s -h)", err, name)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e.ctx = ctx
	return cmd.run(e, opts, pos)
}

// quietParse runs parse (fs's parsing) with the flag package's own
// printing off, so that a mistake is told once: -h prints usage; a flag
// that is not one is the caller's one line, naming the flag meant when
// one is near ("did you mean --unsettled?").
func quietParse(fs *flag.FlagSet, stderr io.Writer, usage func(io.Writer), parse func() error) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := parse()
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stderr)
	case err != nil:
		err = fmt.Errorf("%v%s", err, didYouMean(fs, err))
	}
	return err
}

// didYouMean names the defined flag nearest to the undefined one err
// names (an edit or two away, or one a prefix of the other), or "".
func didYouMean(fs *flag.FlagSet, err error) string {
	_, bad, ok := strings.Cut(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	bad = strings.TrimLeft(bad, "-")
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := roads.EditDistance(bad, f.Name)
		if len(bad) >= 3 && (strings.HasPrefix(f.Name, bad) || strings.HasPrefix(bad, f.Name)) {
			d = min(d, 2)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// withoutPSN drops the process serial number argument (-psn_0_12345)
// that macOS's LaunchServices may pass a bundle it launches (after a
// first launch past Gatekeeper, or from a notification); left in, the
// flag parse would exit 2, unseen, and Delta would not start (issue 37,
// N6; bitcoin/bitcoin#17179 drops it the same way). Elsewhere args are
// left as they are.
func withoutPSN(goos string, args []string) []string {
	if goos != "darwin" {
		return args
	}
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-psn_") {
			out = append(out, a)
		}
	}
	return out
}

// findCommand finds the subcommand among args, wherever it is: flags may
// come before or after it. It returns "" when there is none (run Delta),
// and args without the command's name.
func findCommand(args []string) (string, []string, error) {
	takesValue := flagsTakingValues()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			if cmdName := firstCommand(args[i+1:], takesValue); cmdName != "" {
				continue // delta -h status: the command's own help
			}
			return "help", nil, nil
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] {
				i++ // its value
			}
			continue
		}
		if a == "help" {
			return "help", nil, nil
		}
		if lookup(a) == nil {
			return "", nil, fmt.Errorf("%q is not a command of delta (delta -h lists them)", a)
		}
		rest := append(append([]string{}, args[:i]...), args[i+1:]...)
		return a, rest, nil
	}
	return "", args, nil
}

func firstCommand(args []string, takesValue map[string]bool) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] {
				i++
			}
			continue
		}
		if lookup(a) != nil {
			return a
		}
		return ""
	}
	return ""
}

// flagsTakingValues names every flag of every command that takes a value,
// so that findCommand can step over values.
func flagsTakingValues() map[string]bool {
	m := map[string]bool{}
	add := func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				m[f.Name] = true
			}
		})
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	serverFlags(fs, &settings{})
	add(fs)
	for _, c := range commands {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.String("state-dir", "", "")
		if c.flags != nil {
			c.flags(fs)
		}
		add(fs)
	}
	return m
}

// parseInterspersed parses flags wherever they are among the positional
// arguments; after "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return append(pos, tail...), nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Delta carries an app's requests to the person's other computers over the best
road at the moment, and sends writes at most once.

usage: delta [command] [flags] [arguments]

commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n  %-8s   %s\n", c.name, c.args, "", c.summary)
	}
	fmt.Fprint(w, `
Flags may come before or after the command. Every command takes
--state-dir (default DELTA_STATE_DIR, else this OS's state folder); those
that read take --json. "delta COMMAND -h" shows a command's flags, and
"delta run -h" the flags of Delta itself.

exit codes: 0 done (a read or call answered 2xx) · 1 failed otherwise ·
2 bad command line · 3 Delta is not running · 4 not carried out (nothing
was sent, or the owner proved it did not act) · 5 outcome unknown (Delta
reconciles it) · 6 request id in use for another request · 7 the owner app
answered with an HTTP error · 8 a person must check · 9 the answer broke
off (what was printed is not the whole) · 10 the call's state does not
allow it (ask or settle a settled call, dismiss one that needs a person) ·
11 a stale answer from this computer's cache (the peer could not be
reached; get --fresh refuses one)
`)
}
