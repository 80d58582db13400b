// Package cli is delta's command line, as Tailscale's cmd/tailscale/cli
// is tailscale's: the commands that talk to this computer's running Delta
// through the kit (status, ping, calls and receipts, get and call, apps,
// forwards), the parsing every command shares (flags before or after the
// command, --state-dir, --json, "did you mean"), and the exit codes that
// say an outcome to scripts. The program beside it, Delta itself, and the
// commands that act on the state folder (init, pair, demo, uninstall, …)
// are the main package's: it hands them to Program.
package cli

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

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/kit"
)

// Exit codes: the outcome, for scripts (docs/protocol.md, "The command
// line's exit codes", and docs/guide.md).
const (
	ExitOK          = 0 // done; a read or call answered with a 2xx status
	ExitFailed      = 1 // failed for another reason: the message names it
	ExitUsage       = 2 // the command line is wrong
	ExitDeltaDown   = 3 // this computer's Delta is not running
	ExitUnavailable = 4 // not carried out: nothing was sent, or the owner proved it did not act
	ExitUnknown     = 5 // outcome unknown: the call left and no answer came (Delta reconciles it)
	ExitConflict    = 6 // the request id is in use for another request
	ExitAppError    = 7 // the owner app answered with an HTTP error status (4xx, 5xx)
	ExitNeedsPerson = 8 // the call needs a person: its owner cannot say whether it was carried out
	ExitCut         = 9 // the answer broke off on its way and could not be continued: what was printed is not the whole
	// ExitNotNow: the call is in a state that does not allow it (ask or
	// settle a settled call, set aside one that needs a person).
	ExitNotNow = 10
	// ExitStale: a read answered from this computer's cache because the
	// peer could not be reached (the answer was printed, labelled stale).
	ExitStale = 11
	// ExitNotFound: what the command names is not on this computer: no
	// call with that request id, no receipt, peer, app or forward by that
	// name.
	// Never 4: a typo'd id is not a call that was not carried out.
	ExitNotFound = 12
)

// ExitCodes is every exit code and what it means: what delta -h prints,
// and the table in the README and docs/protocol.md (TestExitCodeTables
// holds them to it).
var ExitCodes = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "done: a read or call answered with a 2xx status; `show`: answered or carried out"},
	{ExitFailed, "failed for another reason: the message names it"},
	{ExitUsage, "the command line is wrong: an unknown command or flag, a bad value, a missing argument"},
	{ExitDeltaDown, "this computer's Delta is not running"},
	{ExitUnavailable, "not carried out: nothing was sent, or the owner proved it did not act"},
	{ExitUnknown, "outcome unknown: the call left and no answer came; Delta never sends it again and reconciles it"},
	{ExitConflict, "the request id is in use for another request"},
	{ExitAppError, "the owner app answered with an HTTP error status (4xx, 5xx)"},
	{ExitNeedsPerson, "a person must check: the call's owner cannot say whether it was carried out"},
	{ExitCut, "the answer broke off and could not be continued: what was printed is not the whole"},
	{ExitNotNow, "not now: the call's or receipt's state does not allow it (`ask` or `settle` a settled call, `dismiss` one that needs a person, check a receipt checked already)"},
	{ExitStale, "a stale answer: the peer could not be reached, and what was printed is this computer's cached one (`get --fresh` refuses it)"},
	{ExitNotFound, "not found: no call with that request id, or no receipt, peer, app or forward by that name, on this computer"},
}

// ErrUsage marks a bad command line for Delta itself (exit code 2).
var ErrUsage = errors.New("bad command line")

// ExitError carries an exit code with its message.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Exitf is an error with exit code code and a message.
func Exitf(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Command is one subcommand of delta.
type Command struct {
	Name, Args, Summary string
	// Flags adds the command's own flags to fs (beside --state-dir and,
	// for those that read, --json).
	Flags func(fs *flag.FlagSet) any
	// Reads: the command has --json.
	Reads bool
	Run   func(e *Env, opts any, args []string) error
}

// Env is what a command runs with.
type Env struct {
	Ctx      context.Context
	Stdout   io.Writer
	Stderr   io.Writer
	StateDir string
	JSON     bool
}

// Client opens the kit's client of the running Delta.
func (e *Env) Client() (*kit.Client, error) {
	c, err := kit.Open(e.StateDir)
	if err != nil {
		return nil, e.DownErr(err)
	}
	c.App = "delta" // the command line names itself, not Go's client; call --app names another
	return c, nil
}

// DownErr gives a *kit.DeltaDown its exit code and a hint.
func (e *Env) DownErr(err error) error {
	var down *kit.DeltaDown
	if errors.As(err, &down) {
		return &ExitError{Code: ExitDeltaDown, Err: fmt.Errorf("%w (start it: open the Delta app, or run delta run; --state-dir names another folder)", err)}
	}
	return err
}

// PrintJSON writes v as indented JSON.
func (e *Env) PrintJSON(v any) error {
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// The commands of this package, for Program.Commands.
var (
	RunCommand = &Command{Name: "run", Summary: "run Delta (the default when no command is given)"}
	Status     = []*Command{statusCommand, pingCommand, loginCommand, pairingCommand}
	Calls      = []*Command{callsCommand, showCommand, askCommand, dismissCommand, settleCommand, forgetCommand, receiptsCommand, showReceiptCommand, checkReceiptCommand, forgetReceiptCommand}
	Requests   = []*Command{getCommand, callCommand, appsCommand, forwardCommand}
)

// Program is delta: Delta itself (Run, with its Flags) when no command is
// given or "run", else one of Commands, in the order -h lists them.
type Program struct {
	Run      func(args []string, stderr io.Writer) error
	Flags    func(fs *flag.FlagSet)
	Commands []*Command
}

func (p *Program) lookup(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Main runs delta's command line and returns the exit code.
func (p *Program) Main(args []string, stdout, stderr io.Writer) int {
	err := p.dispatch(args, stdout, stderr)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintln(stderr, "delta:", err)
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}

func (p *Program) dispatch(args []string, stdout, stderr io.Writer) error {
	name, rest, err := p.FindCommand(WithoutPSN(runtime.GOOS, args))
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if name == "help" {
		p.Usage(stdout) // asked for: it is the answer, on stdout (delta -h | less)
		return nil
	}
	if name == "" || name == "run" {
		if err := p.Run(rest, stderr); err != nil {
			var ee *ExitError
			if errors.As(err, &ee) || errors.Is(err, flag.ErrHelp) {
				return err
			}
			if errors.Is(err, ErrUsage) {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			return err
		}
		return nil
	}
	cmd := p.lookup(name)
	fs := flag.NewFlagSet("delta "+name, flag.ContinueOnError)
	e := &Env{Stdout: stdout, Stderr: stderr}
	fs.StringVar(&e.StateDir, "state-dir", localapi.DefaultStateDir(), "the running Delta's state folder (DELTA_STATE_DIR)")
	if cmd.Reads {
		fs.BoolVar(&e.JSON, "json", false, "print JSON")
	}
	var opts any
	if cmd.Flags != nil {
		opts = cmd.Flags(fs)
	}
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\n%s.\n\nflags:\n", strings.TrimSpace("usage: delta "+cmd.Name+" "+cmd.Args), cmd.Summary)
		fs.PrintDefaults()
	}
	var pos []string
	if err := QuietParse(fs, stderr, usage, func() (err error) {
		pos, err = parseInterspersed(fs, rest)
		return err
	}); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s (see delta %s -h)", err, name)}
	}
	// A hang-up (the terminal closed) ends a command as Ctrl-C does: the
	// demo then stops its Deltas and removes its folders.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	e.Ctx = ctx
	return cmd.Run(e, opts, pos)
}

// QuietParse runs parse (fs's parsing) with the flag package's own
// printing off, so that a mistake is told once: -h prints usage; a flag
// that is not one is the caller's one line, naming the flag meant when
// one is near ("did you mean --unsettled?").
func QuietParse(fs *flag.FlagSet, stderr io.Writer, usage func(io.Writer), parse func() error) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := parse()
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stderr)
	case err != nil:
		// The flag package names a flag with one dash; Delta's are said
		// with two, as -h says them.
		msg := strings.Replace(err.Error(), " for flag -", " for flag --", 1)
		err = fmt.Errorf("%s%s", msg, didYouMean(fs, err))
	}
	return err
}

// nearestCommand is "; did you mean NAME?" for the command nearest to a,
// or "".
func (p *Program) nearestCommand(a string) string {
	var names []string
	for _, c := range p.Commands {
		names = append(names, c.Name)
	}
	if best := nearest(a, names); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}

// didYouMean names the defined flag nearest to the undefined one err
// names, or "".
func didYouMean(fs *flag.FlagSet, err error) string {
	_, bad, ok := strings.Cut(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if best := nearest(strings.TrimLeft(bad, "-"), names); best != "" {
		return "; did you mean --" + best + "?"
	}
	return ""
}

// nearest is the name nearest to bad (an edit or two away, or, for three
// letters or more, one a prefix of the other), or "".
func nearest(bad string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := roads.EditDistance(bad, n)
		if len(bad) >= 3 && (strings.HasPrefix(n, bad) || strings.HasPrefix(bad, n)) {
			d = min(d, 2)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// WithoutPSN drops the process serial number argument (-psn_0_12345)
// that macOS's LaunchServices may pass a bundle it launches (after a
// first launch past Gatekeeper, or from a notification); left in, the
// flag parse would exit 2, unseen, and Delta would not start (issue 37,
// N6; bitcoin/bitcoin#17179 drops it the same way). Elsewhere args are
// left as they are.
func WithoutPSN(goos string, args []string) []string {
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

// FindCommand finds the subcommand among args, wherever it is: flags may
// come before or after it. It returns "" when there is none (run Delta),
// and args without the command's name.
func (p *Program) FindCommand(args []string) (string, []string, error) {
	takesValue := p.flagsTakingValues()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			if cmdName := p.firstCommand(args[i+1:], takesValue); cmdName != "" {
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
		if p.lookup(a) == nil {
			return "", nil, fmt.Errorf("%q is not a command of delta%s (delta -h lists them)", a, p.nearestCommand(a))
		}
		rest := append(append([]string{}, args[:i]...), args[i+1:]...)
		return a, rest, nil
	}
	return "", args, nil
}

func (p *Program) firstCommand(args []string, takesValue map[string]bool) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] {
				i++
			}
			continue
		}
		if p.lookup(a) != nil {
			return a
		}
		return ""
	}
	return ""
}

// flagsTakingValues names every flag of every command that takes a value,
// so that FindCommand can step over values.
func (p *Program) flagsTakingValues() map[string]bool {
	m := map[string]bool{}
	add := func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				m[f.Name] = true
			}
		})
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	if p.Flags != nil {
		p.Flags(fs)
	}
	add(fs)
	for _, c := range p.Commands {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.String("state-dir", "", "")
		if c.Flags != nil {
			c.Flags(fs)
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

// Usage writes delta -h.
func (p *Program) Usage(w io.Writer) {
	fmt.Fprint(w, `Delta carries an app's requests to the person's other computers over the best
road at the moment, and sends writes at most once.

usage: delta [command] [flags] [arguments]

commands:
`)
	for _, c := range p.Commands {
		if c.Args == "" {
			fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n  %-8s   %s\n", c.Name, c.Args, "", c.Summary)
	}
	fmt.Fprint(w, `
Flags may come before or after the command. Every command takes
--state-dir (default DELTA_STATE_DIR, else this OS's state folder); those
that read take --json. "delta COMMAND -h" shows a command's flags, and
"delta run -h" the flags of Delta itself.

exit codes:
`)
	for _, x := range ExitCodes {
		// Wrapped at 78 columns, each line after the first under the meaning.
		line := fmt.Sprintf("  %2d ", x.Code)
		for _, word := range strings.Fields(strings.ReplaceAll(x.Meaning, "`", "")) {
			if len(line)+1+len(word) > 78 {
				fmt.Fprintln(w, line)
				line = "     "
			}
			line += " " + word
		}
		fmt.Fprintln(w, line)
	}
}
