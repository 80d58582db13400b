package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/examples/notes"
	"github.com/delta-roads/delta/gateway/modes/tailnet/loopnet"
	"github.com/delta-roads/delta/kit"
	"github.com/delta-roads/delta/ui"
)

type demoOpts struct {
	check    *bool
	dir      *string
	headless *bool
}

// demoCommand is `delta demo`: two Deltas on a tailnet of this computer's
// own, and a guided tour of what Delta promises.
var demoCommand = &cli.Command{Name: "demo", Args: "[--check] [--dir DIR]", Summary: "two Deltas, alpha and beta, on a loopback tailnet, and a guided tour (no network needed)",
	Flags: func(fs *flag.FlagSet) any {
		return &demoOpts{check: fs.Bool("check", false, "run the tour once without pauses or the tray; exit 0 only if every step did what it said"),
			dir:      fs.String("dir", "", "keep the two Deltas' state folders here (default a temporary folder, removed at the end)"),
			headless: fs.Bool("headless", false, "no tray for alpha")}
	},
	Run: func(e *cli.Env, o any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "demo: unexpected argument %q", args[0])
		}
		opts := o.(*demoOpts)
		d := &demo{out: e.Stdout, check: *opts.check, headless: *opts.headless || *opts.check}
		if !d.headless {
			// The tour speaks of the menu bar only where there is one.
			if !ui.TrayAvailable {
				d.headless = true
				d.say("(this build has no tray; alpha runs headless, and the tour says what the menu would show)")
			} else if _, err := ui.DesktopProblem(); err != nil {
				d.headless = true
				d.say("(no desktop here: %v; alpha runs headless, and the tour says what the menu would show)", err)
			}
		}
		return d.run(e.Ctx, *opts.dir)
	}}

// demo is one run of the tour.
type demo struct {
	out      io.Writer
	check    bool
	headless bool
	failed   []string
	stdin    *bufio.Reader
	step     int
	// nap is the pause off a terminal; 0 is 3 s.
	nap time.Duration
}

// demoWait bounds every wait of the tour: the tailnet's login, discovery
// and each settlement.
const demoWait = 90 * time.Second

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demo) title(s string) {
	d.step++
	d.say("\n── %d. %s ──", d.step, s)
}

// expect records whether a step did what the tour said it would.
func (d *demo) expect(ok bool, format string, args ...any) bool {
	what := fmt.Sprintf(format, args...)
	if ok {
		d.say("   ✓ %s", what)
	} else {
		d.say("   ✗ NOT AS SAID: %s", what)
		d.failed = append(d.failed, what)
	}
	return ok
}

// pause lets a person watch: Enter on a terminal, a few seconds otherwise,
// none with --check.
func (d *demo) pause(what string) {
	if d.check {
		return
	}
	if cli.IsTerminal(os.Stdin) && cli.IsTerminal(d.out) { // not /dev/null, a character device too
		fmt.Fprintf(d.out, "   … %s — press Enter to go on ", what)
		if d.stdin == nil {
			d.stdin = bufio.NewReader(os.Stdin)
		}
		_, _ = d.stdin.ReadString('\n') // EOF goes on too
		return
	}
	d.say("   … %s", what)
	if d.nap == 0 {
		d.nap = 3 * time.Second
	}
	time.Sleep(d.nap)
}

// waitFor polls cond until it holds or demoWait passes.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(demoWait)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: gave up after %s waiting for %s", demoWait, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// child is one Delta the demo runs as its own process.
type child struct {
	name string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	c    *kit.Client
}

func (d *demo) run(ctx context.Context, keep string) (err error) {
	root := keep
	if root == "" {
		if root, err = os.MkdirTemp("", "delta-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	}
	d.say("Delta's demo: two computers, alpha and beta, played by two Deltas on this one.")
	d.say("They join a tailnet that runs inside this process (Tailscale's test control server and")
	d.say("a DERP relay on 127.0.0.1), find each other, and also reach each other on the lan road")
	d.say("over loopback, with pinned TLS and tickets. Nothing leaves this computer.")
	d.say("State folders: %s", root)

	tn, err := loopnet.Start(loopnet.Options{})
	if err != nil {
		return err
	}
	defer tn.Close()
	var kids []*child
	defer func() {
		for _, k := range kids {
			k.stop()
		}
	}()
	for _, name := range []string{"alpha", "beta"} {
		k, err := d.start(root, name, tn.URL, name == "beta" || d.headless)
		if err != nil {
			return err
		}
		kids = append(kids, k)
	}
	alpha, beta := kids[0], kids[1]
	for _, k := range kids {
		if err := k.waitUp(ctx); err != nil {
			return err
		}
	}
	for _, k := range kids {
		if err := waitFor(ctx, k.name+" to log in to the tailnet", func() bool {
			st, err := k.c.Status(ctx)
			return err == nil && st.Tailnet != nil && st.Tailnet.State == "Running"
		}); err != nil {
			return err
		}
	}
	tn.SameUserAll() // one person's computers
	var st *localapi.Status
	if err := waitFor(ctx, "alpha to find beta on the lan road", func() bool {
		st, err = alpha.c.Status(ctx)
		return err == nil && roadState(st, "beta", "lan") == localapi.RoadUp
	}); err != nil {
		return err
	}
	d.say("\nalpha found beta: %s", peerLine(st, "beta"))

	app := &notes.App{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	reg, err := beta.c.RegisterApp(ctx, "notes", "http://"+ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: app.Handler(reg.Secret)}
	go srv.Serve(ln)
	defer srv.Close()
	d.say("beta runs the notes app (examples/notes), registered with beta's Delta as \"notes\".")
	if !d.headless {
		d.say("alpha's Δ is in the menu bar: watch it as the tour goes.")
	}
	d.pause("ready")
	alpha.c.App = "demo"
	d.tour(ctx, alpha, app)

	if len(d.failed) > 0 {
		d.say("\nThe tour did not do what it said in %d step(s):", len(d.failed))
		for _, f := range d.failed {
			d.say("  - %s", f)
		}
		return cli.Exitf(cli.ExitFailed, "demo: %d step(s) did not do what they said (the Deltas' logs: %s)", len(d.failed), root)
	}
	d.say("\nEvery step did what it said.")
	if d.check {
		return nil
	}
	self := commandName()
	d.say("alpha and beta keep running; try, in another terminal:")
	d.say("  %s --state-dir %s status", self, alpha.dir)
	d.say("  %s --state-dir %s calls", self, alpha.dir)
	d.say("  %s --state-dir %s call beta notes /notes --data '{\"text\":\"hello\"}'", self, alpha.dir)
	d.say("  %s --state-dir %s open", self, alpha.dir)
	d.say("Ctrl-C ends the demo.")
	<-ctx.Done()
	return nil
}

// commandName is how a person in this folder runs this delta: "delta"
// when that is what the PATH finds, else its path (bin/delta from the
// repository, where make demo runs it).
func commandName() string {
	exe, err := os.Executable()
	if err != nil {
		return "delta"
	}
	return commandFor(exe, func() (string, error) { return exec.LookPath("delta") }, os.Getwd)
}

// commandFor is commandName's rule, with the PATH's answer and the
// working folder given.
func commandFor(exe string, onPath func() (string, error), wd func() (string, error)) string {
	if p, err := onPath(); err == nil {
		if a, err := filepath.Abs(p); err == nil && filepath.Clean(a) == filepath.Clean(exe) {
			return "delta"
		}
	}
	if dir, err := wd(); err == nil {
		if rel, err := filepath.Rel(dir, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, string(filepath.Separator)) {
				return "./" + rel
			}
			return rel
		}
	}
	return exe
}

// tour is the four steps.
func (d *demo) tour(ctx context.Context, alpha *child, app *notes.App) {
	d.title("A read")
	d.say("alpha's app asks its own Delta for beta's notes: GET /v1/peers/beta/notes/notes.")
	d.say("Reads get every convenience: pooled connections, one retry on a fresh road, a cache.")
	ans, err := alpha.c.Get(ctx, "beta", "notes", "/notes", nil)
	if d.expect(err == nil && ans.Status == 200, "beta's notes app answered the read%s", unless(err == nil && ans.Status == 200, err, ans)) {
		d.say("   it came over the %s road: %s", ans.Road, strings.TrimSpace(string(ans.Body)))
	}
	d.pause("a read")

	d.title("A call, answered")
	id := kit.NewRequestID()
	d.say("A write is a call: sent at most once, under a request id the app knows before it leaves:")
	d.say("   %s", id)
	ans, err = alpha.c.Call(ctx, "beta", "notes", "POST", "/notes", []byte(`{"text":"buy milk"}`), &kit.CallOptions{RequestID: id})
	d.expect(err == nil && ans.Status == 201, "beta's notes app carried it out and answered 201%s", unless(err == nil && ans.Status == 201, err, ans))
	d.expect(len(app.Notes()) == 1, "beta has the note, once")
	d.pause("an answered call")

	d.title("A call whose answer is lost")
	d.say("Now the notes app applies the write, then takes 6 s to answer; alpha's app waits only 2 s.")
	d.say("Delta cannot know whether the write happened, so it says so — and never sends it again.")
	app.Slow(6 * time.Second)
	lost := kit.NewRequestID()
	_, err = alpha.c.Call(ctx, "beta", "notes", "POST", "/notes", []byte(`{"text":"call the plumber"}`), &kit.CallOptions{RequestID: lost, Timeout: 2 * time.Second})
	var unknown *kit.OutcomeUnknown
	if d.expect(errors.As(err, &unknown), "alpha's app was told: outcome unknown%s", unlessUnknown(err)) {
		d.say("   %s", unknown.Detail)
	}
	d.expect(len(app.Notes()) == 2, "the app did apply it: beta has the note")
	st, err := alpha.c.Status(ctx)
	d.expect(err == nil && st.Unsettled == 1, "alpha counts 1 write it is asking beta about (the menu's first line, the status page, `delta calls --unsettled`)")
	if !d.headless {
		d.say("   The Δ in the menu bar has a dot at its heart now: Delta is asking. A notification says the write's outcome is unknown.")
	}
	d.pause("an unsettled write")
	d.say("alpha's Delta asks beta's Delta by request id until it knows (1 s, 2 s, 5 s, …):")
	sctx, cancel := context.WithTimeout(ctx, demoWait)
	rec, err := alpha.c.WaitSettled(sctx, lost)
	cancel()
	if d.expect(err == nil && rec.State == "carried_out", "it settled as carried out, with the app's own answer%s", unless(err == nil && rec.State == "carried_out", err, rec)) {
		d.say("   %s", rec.Detail)
		if rec.Answer != nil {
			d.say("   the answer, kept for the app: %d %s", rec.Answer.Status, strings.TrimSpace(string(rec.Answer.Body)))
		}
	}
	d.pause("settled")

	d.title("A call the owner cannot account for")
	d.say("This time the notes app reads the write and its connection breaks before it answers,")
	d.say("as an app that crashes would. beta's Delta saw the request go in and no answer come out:")
	d.say("nobody can know whether the note was stored, and Delta will not guess.")
	app.ResetNext()
	person := kit.NewRequestID()
	_, err = alpha.c.Call(ctx, "beta", "notes", "POST", "/notes", []byte(`{"text":"pay the rent"}`), &kit.CallOptions{RequestID: person})
	if d.expect(errors.As(err, &unknown), "alpha's app was told: outcome unknown%s", unlessUnknown(err)) {
		d.say("   %s", unknown.Detail)
	}
	sctx, cancel = context.WithTimeout(ctx, demoWait)
	rec, err = alpha.c.WaitSettled(sctx, person)
	cancel()
	if d.expect(err == nil && rec.State == "needs_person", "it needs a person: beta's Delta cannot say whether the app acted%s", unless(err == nil && rec.State == "needs_person", err, rec)) {
		d.say("   %s", rec.Detail)
		d.say("   What was sent is kept with the call, so a person can tell which write it was:")
		if full, err := alpha.c.CallRecord(ctx, person); err == nil && full.Request != nil {
			d.say("   %s", strings.TrimSpace(string(full.Request.Body)))
		}
		d.say("   On beta, `delta receipts` (or its status page) shows what it received: app_unknown.")
	}
	d.pause("a write that needs you")
	d.say("A person checks beta's notes app, finds the note, and says so (the menu's It happened…, the")
	d.say("status page, or: delta --state-dir %s settle %s --carried-out --note …):", alpha.dir, person)
	found := false
	for _, n := range app.Notes() {
		found = found || n.RequestID == person
	}
	note := "the note is in beta's notes app"
	if !found {
		note = "no such note in beta's notes app"
	}
	state := map[bool]string{true: "carried_out", false: "not_carried_out"}[found]
	rec, err = alpha.c.Settle(ctx, person, state, note)
	if d.expect(err == nil && rec.State == state && rec.SettledBy == "a person", "the person's settlement is recorded: %s%s", state, unless(err == nil && rec.State == state && rec.SettledBy == "a person", err, rec)) {
		d.say("   %s; Delta stops asking beta.", rec.Detail)
	}
	d.pause("settled by a person")
}

// unlessUnknown says what came instead of outcome unknown.
func unlessUnknown(err error) string {
	var unknown *kit.OutcomeUnknown
	if errors.As(err, &unknown) {
		return ""
	}
	if err == nil {
		return " (instead it was answered)"
	}
	return " (instead: " + err.Error() + ")"
}

// unless says what came instead, when a step did not do what it said:
// nothing when ok (the line says it all), else the error or what came.
func unless(ok bool, err error, v any) string {
	if ok {
		return ""
	}
	if err != nil {
		return " — but: " + err.Error()
	}
	switch x := v.(type) {
	case *kit.Answer:
		return fmt.Sprintf(" — but it answered %d", x.Status)
	case *localapi.Call:
		return " — but it is " + x.State
	}
	return ""
}

// start runs one Delta for the demo.
func (d *demo) start(root, name, controlURL string, headless bool) (*child, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: find the delta binary: %w", err)
	}
	args := []string{"run", "--state-dir", dir, "--listen", "127.0.0.1:0", "--control-url", controlURL, "--hostname", name,
		"--lan-addrs", "127.0.0.1", "--lan-port", strconv.Itoa(port)}
	if headless {
		args = append(args, "--headless")
	}
	out, err := os.Create(filepath.Join(root, name+".out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TS_NO_LOGS_NO_SUPPORT=true")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("demo: start %s: %w", name, err)
	}
	k := &child{name: name, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		out.Close()
		close(k.done)
	}()
	return k, nil
}

// waitUp waits for the child's local.json and opens the kit on it.
func (k *child) waitUp(ctx context.Context) error {
	err := waitFor(ctx, k.name+"'s Delta to start", func() bool {
		select {
		case <-k.done:
			return true
		default:
		}
		lf, err := localapi.ReadLocal(k.dir)
		return err == nil && lf.PID == k.cmd.Process.Pid
	})
	select {
	case <-k.done:
		return fmt.Errorf("demo: %s's Delta stopped at once (its output: %s.out)", k.name, k.dir)
	default:
	}
	if err != nil {
		return err
	}
	k.c, err = kit.Open(k.dir)
	return err
}

// stop ends the child as Quit does (SIGTERM), and kills it if it has not
// stopped in 15 s.
func (k *child) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM) // gone already: nothing to stop
	select {
	case <-k.done:
	case <-time.After(15 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func roadState(st *localapi.Status, peer, road string) localapi.RoadState {
	for _, p := range st.Peers {
		if p.Name == peer {
			for _, r := range p.Roads {
				if r.Road == road {
					return r.State
				}
			}
		}
	}
	return ""
}

func peerLine(st *localapi.Status, peer string) string {
	var parts []string
	for _, p := range st.Peers {
		if p.Name != peer {
			continue
		}
		for _, r := range p.Roads {
			s := fmt.Sprintf("%s %s %s", r.Road, r.Address, r.State)
			if r.Path != "" {
				s += " (" + r.Path + ")"
			}
			parts = append(parts, s)
		}
	}
	b, _ := json.Marshal(parts)
	return strings.Trim(strings.ReplaceAll(string(b), `","`, "; "), `[]"`)
}
