// The runtime's look, once a second while it is awake, for a new CPU
// limit (cgroup files read on Linux) to follow with GOMAXPROCS: a
// computer's CPUs do not change under a menu-bar app, and each look was
// about 1 % of an idle Delta's CPU (docs/benchmarks.md).
//go:debug updatemaxprocs=0

// Command delta runs Delta: the gateway that lets a person's own computers
// talk to each other over whatever road joins them (DESIGN.md).
//
// This package is wiring only: it reads the settings of DESIGN §7 from flags
// and the environment, sets up logging, starts the tailnet node and the
// gateway, runs the menu-bar app (ui) on the main thread unless headless,
// and shuts everything down on Quit, SIGINT or SIGTERM.
//
// With a command (`delta status`, `delta call …`, `delta demo`; `delta -h`
// lists them) it is the command line instead: app/cli's commands, which
// talk to a running Delta through the kit, and this package's, which act
// on the state folder and the install (commands.go hands both to
// cli.Program).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tailscale.com/ipn"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
	"github.com/delta-roads/delta/app/bugreport"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway"
	"github.com/delta-roads/delta/gateway/modes/static"
	"github.com/delta-roads/delta/gateway/modes/tailnet"
	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/kit"
	"github.com/delta-roads/delta/ui"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(program.Main(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks a bad command line for Delta itself (exit code 2).
var errUsage = cli.ErrUsage

// settings are DESIGN §7's, from flags and the environment.
type settings struct {
	stateDir   string
	listen     string
	peerListen string
	headless   bool
	static     bool
	lanPort    int
	controlURL string
	hostname   string
	lanAddrs   []string
	// uploadLogs opts in to tsnet's log upload to Tailscale.
	uploadLogs bool
	// verbose copies tsnet's own log lines to stderr.
	verbose bool
	// traceCalls writes each call's steps, with their times, to the log.
	traceCalls bool
	// defaultListen and defaultLANPort: the ports are the defaults, not
	// chosen by the person (flag or environment), so a taken one (another
	// user's Delta) is replaced with a free one.
	defaultListen, defaultLANPort bool
	// given names the flags the person set, by flag or environment.
	given map[string]bool
}

// modeFlags are the flags of one mode only: set in the other, they would
// do nothing, and a person who set one meant something.
var modeFlags = map[string]string{
	"lan-port":             "tailnet",
	"lan-addrs":            "tailnet",
	"control-url":          "tailnet",
	"hostname":             "tailnet",
	"tailscale-log-upload": "tailnet",
	"peer-listen":          "static",
	"static":               "static",
}

// flagEnv is the environment variable of each flag that has one.
var flagEnv = map[string]string{
	"listen": "DELTA_LISTEN", "peer-listen": "DELTA_PEER_LISTEN", "headless": "DELTA_HEADLESS", "lan-port": "DELTA_LAN_PORT",
	"control-url": "DELTA_CONTROL_URL", "hostname": "DELTA_HOSTNAME", "tailscale-log-upload": "DELTA_TAILSCALE_LOG_UPLOAD",
	"verbose": "DELTA_VERBOSE", "lan-addrs": "DELTA_LAN_ADDRS", "static": "DELTA_STATIC", "trace-calls": "DELTA_TRACE_CALLS",
}

// modeConflict refuses a flag of the other mode (given: the flags set),
// naming what it is for and what to use instead.
func modeConflict(static bool, given map[string]bool) error {
	mode := "tailnet"
	if static {
		mode = "static"
	}
	var names []string
	for name := range given {
		if m, ok := modeFlags[name]; ok && m != mode {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	how := func(n string) string {
		if e := flagEnv[n]; e != "" {
			return "--" + n + " (or " + e + ")"
		}
		return "--" + n
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, how(n))
	}
	if static {
		return fmt.Errorf("%w: %s is for tailnet mode, and this Delta runs in static mode (config.json names peers): "+
			"its peer API listens on --peer-listen or config.json's peer_listen, and it joins no tailnet", errUsage, strings.Join(parts, ", "))
	}
	return fmt.Errorf("%w: %s is for static mode, and this Delta runs in tailnet mode (config.json names no peers): "+
		"its peers reach it over the tailnet and over TLS on --lan-port; delta init --static makes a static config", errUsage, strings.Join(parts, ", "))
}

// serverFlags defines Delta's own flags on fs, into s; lanAddrs receives
// --lan-addrs unsplit.
func serverFlags(fs *flag.FlagSet, s *settings) (lanAddrs *string) {
	fs.StringVar(&s.stateDir, "state-dir", localapi.DefaultStateDir(), "the state folder (DELTA_STATE_DIR)")
	fs.StringVar(&s.listen, "listen", envOr("DELTA_LISTEN", gateway.DefaultListen), "the local API's loopback address; port 0 takes a free one (DELTA_LISTEN)")
	fs.StringVar(&s.peerListen, "peer-listen", envOr("DELTA_PEER_LISTEN", ""), "static mode: the peer API's plain-TCP address (DELTA_PEER_LISTEN); default the config's peer_listen, else "+static.DefaultPeerListen)
	fs.BoolVar(&s.static, "static", os.Getenv("DELTA_STATIC") == "1", "static mode with no account, for a state folder that has no config yet (DELTA_STATIC=1): this computer waits to be paired by ID, from the setup page or delta pair; written to config.json")
	fs.BoolVar(&s.headless, "headless", os.Getenv("DELTA_HEADLESS") == "1", "everything but the tray (DELTA_HEADLESS=1)")
	lanPort, _ := strconv.Atoi(envOr("DELTA_LAN_PORT", strconv.Itoa(tailnet.DefaultLANPort)))
	fs.IntVar(&s.lanPort, "lan-port", lanPort, "tailnet mode: the TLS listener's port on lan and thunderbolt addresses (DELTA_LAN_PORT)")
	fs.StringVar(&s.controlURL, "control-url", envOr("DELTA_CONTROL_URL", ""), "tailnet mode: the tailnet's control server (DELTA_CONTROL_URL)")
	fs.StringVar(&s.hostname, "hostname", envOr("DELTA_HOSTNAME", ""), "tailnet mode: this computer's name on the tailnet (DELTA_HOSTNAME)")
	fs.BoolVar(&s.uploadLogs, "tailscale-log-upload", os.Getenv("DELTA_TAILSCALE_LOG_UPLOAD") == "1",
		"tailnet mode: let the tailnet's software upload its log to Tailscale, for Tailscale's support (DELTA_TAILSCALE_LOG_UPLOAD=1); off by default")
	fs.BoolVar(&s.verbose, "verbose", os.Getenv("DELTA_VERBOSE") == "1", "also write the tailnet software's own log lines to stderr (DELTA_VERBOSE=1); they always go to tailscale.log")
	fs.BoolVar(&s.traceCalls, "trace-calls", os.Getenv("DELTA_TRACE_CALLS") == "1", "write each call's steps on both sides (journaled, connected, handed to the app, …) with their times to the log, for measuring where a call's time goes (DELTA_TRACE_CALLS=1; tools/bench -parts steps)")
	return fs.String("lan-addrs", envOr("DELTA_LAN_ADDRS", ""), "tailnet mode: comma-separated addresses for the TLS listener, each IP or road=IP (DELTA_LAN_ADDRS); default this computer's lan and thunderbolt interfaces")
}

func parse(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("delta run", flag.ContinueOnError)
	lanAddrs := serverFlags(fs, &s)
	usage := func(w io.Writer) {
		fmt.Fprint(w, `usage: delta run [flags]   (or just: delta [flags])

Delta itself: the local API for this computer's apps, the menu (unless
headless), and the roads to this person's other computers. It runs in one
of two modes, chosen by config.json in the state folder:

  tailnet mode   "mode": "tailnet", or no config.json: Delta joins the
                 tailnet (delta login) and finds the other computers
                 there, and over TLS on their lan and thunderbolt addresses.
  static mode    "mode": "static" with peers by address (delta init
                 --static writes it): nothing of Tailscale's is contacted;
                 the peer API listens on --peer-listen, every road TLS 1.3
                 pinned to the computers' IDs (delta id, delta pair); an
                 older config with a shared network key and no IDs is
                 plain TCP.

A config.json with a network key and no peers is refused, never run as
tailnet mode.

A flag of the other mode is refused, saying why.

flags:
`)
		fs.PrintDefaults()
	}
	if err := cli.QuietParse(fs, stderr, usage, func() error { return fs.Parse(args) }); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return s, err
		}
		return s, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("%w: unexpected argument %q (delta run takes flags only; delta -h lists the commands)", errUsage, fs.Arg(0))
	}
	s.given = map[string]bool{}
	for name, env := range flagEnv {
		if os.Getenv(env) != "" {
			s.given[name] = true
		}
	}
	fs.Visit(func(f *flag.Flag) { s.given[f.Name] = true })
	s.defaultListen, s.defaultLANPort = !s.given["listen"], !s.given["lan-port"]
	if s.stateDir == "" {
		return s, errors.New("no state folder: set --state-dir or DELTA_STATE_DIR (HOME is not set either)")
	}
	// Checked here, before anything starts: a bad flag must not cost a
	// login to the tailnet's control server first.
	if err := gateway.CheckListen(s.listen); err != nil {
		return s, err
	}
	if s.lanPort < 1 || s.lanPort > 65535 {
		return s, fmt.Errorf("--lan-port %d is not a port number from 1 to 65535", s.lanPort)
	}
	if *lanAddrs != "" {
		for a := range strings.SplitSeq(*lanAddrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				s.lanAddrs = append(s.lanAddrs, a)
			}
		}
	}
	return s, nil
}

// startStatic makes a state folder whose config names no mode static
// mode waiting to be paired when --static asks (config.json written, so
// the next start is the same without the flag). A config of either mode
// already is left as it is: modeConflict says when --static disagrees.
func startStatic(s settings, fc *statedir.Config, log *slog.Logger) error {
	if !s.static || fc.Mode != "" || fc.Static() {
		return nil
	}
	fc.Mode = statedir.ModeStatic
	path := filepath.Join(s.stateDir, statedir.ConfigFile)
	if err := statedir.WriteJSON(path, fc); err != nil {
		return fmt.Errorf("--static: write %s: %w", path, err)
	}
	log.Info("static mode, waiting to be paired: the setup page's Pair a Computer (or delta pair) pairs this computer with another by its ID", "config", path)
	return nil
}

// canRun refuses, before anything is written, a build that cannot keep a
// journal (withSQLite false: built with CGO_ENABLED=0, as the darwin vet
// does), rather than start and fail at the journal.
func canRun(withSQLite bool) error {
	if !withSQLite {
		return errors.New("this build has no SQLite (it was built with CGO_ENABLED=0, for vetting only) and cannot keep Delta's journal: build it with CGO_ENABLED=1 (make build)")
	}
	return nil
}

func run(args []string, stderr io.Writer) error {
	s, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if err := canRun(journal.Usable); err != nil {
		return err
	}
	fresh, prepared := firstStart(s.stateDir)
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return fmt.Errorf("make state folder: %w", err)
	}
	logDir, err := cli.LogFolder(s.stateDir)
	if err != nil {
		return err
	}
	deltaLog, err := openLogFile(filepath.Join(logDir, "delta.log"), maxLogBytes)
	if err != nil {
		return err
	}
	// A panic or a fatal runtime error (a cgo fault too) writes its
	// traceback to crash.log beside delta.log as well as to stderr, which
	// launchd sends nowhere (issue 37, N3); delta status says when the
	// last one was, and delta bugreport bundles it.
	// A crash log grown past its bound is moved aside first (crashlog.go).
	crashPath := filepath.Join(logDir, crashFile)
	rotateErr := bugreport.RotateCrashLog(crashPath, bugreport.MaxCrashBytes, bugreport.KeptCrashLogs)
	crashErr := setCrashOutput(crashPath)
	defer deltaLog.Close()
	logw := io.MultiWriter(stderr, deltaLog)
	level := slog.LevelInfo
	if s.traceCalls {
		level = slog.LevelDebug // the call steps' lines (caller and owner)
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))
	if crashErr != nil {
		log.Warn("a crash's traceback will reach stderr only", "err", crashErr)
	}
	if rotateErr != nil {
		log.Warn("could not move the full crash log aside: it goes on growing", "path", crashPath, "err", rotateErr)
	}
	withTray := !s.headless
	switch {
	case s.headless:
		log.Info("running headless (--headless or DELTA_HEADLESS=1): everything but the tray and notifications")
	case !ui.TrayAvailable:
		withTray = false
		log.Info("running headless: this build has no tray (macOS's menu bar needs a build with cgo); everything but the tray and notifications")
	default:
		warning, err := ui.DesktopProblem()
		if err != nil {
			withTray = false
			log.Info("running headless: everything but the tray and notifications runs", "why", err)
		} else if warning != "" {
			log.Warn("the desktop may not show the tray", "warning", warning)
		}
	}

	// No App Nap for the gateway on macOS (its probes, reconciler and
	// relays would be throttled while the Mac is idle).
	defer ui.NoAppNap()()

	// The state folder's lock comes before anything else uses the folder.
	lock, err := statedir.Lock(s.stateDir)
	var held *statedir.HeldError
	if errors.As(err, &held) {
		return bringForward(held, withTray, stderr, err)
	}
	if err != nil {
		return err
	}
	switch {
	case fresh && prepared:
		log.Info("the first start with this state folder, which delta init or pair prepared: its journal is made now", "state_dir", s.stateDir)
	case fresh:
		log.Warn("a new state folder: this Delta has no journal or identity yet and makes them now; if you meant another folder, stop and pass --state-dir",
			"state_dir", s.stateDir)
	}
	defer lock.Close()
	// A state folder restored from a backup of, or migrated from, another
	// Mac: its identity is that Mac's, which may still run (MACOS.md §2.9).
	if aside, err := statedir.Moved(s.stateDir, statedir.MachineID(), time.Now()); err != nil {
		return err
	} else if aside != "" {
		log.Warn("this state folder was made on another computer (a backup restored, or a migration): Delta starts here as a new computer, "+
			"with a new identity that peers must learn; the journal and settings stay, and the other computer's keys are kept aside", "aside", aside)
	}
	fc, err := statedir.ReadConfig(s.stateDir)
	if err != nil {
		return err
	}
	if err := startStatic(s, fc, log); err != nil {
		return err
	}
	gcfg := gateway.Config{StateDir: s.stateDir, StateLock: lock, Listen: s.listen, ListenFallback: s.defaultListen, Logger: log, Version: version,
		MaxCallBytes: fc.MaxCallBytes, OpenURL: ui.OpenURL}
	if err := modeConflict(fc.Static(), s.given); err != nil {
		return err
	}
	var node *tailnet.Node
	rounds := make(chan struct{}, 1) // the tailnet's rounds, for the trimmer
	if fc.Static() {
		log.Info("static mode: peers come from config.json; the tailnet is not joined", "peers", len(fc.Peers))
		if err := static.Attach(&gcfg, fc, s.peerListen); err != nil {
			return err
		}
	} else {
		override, err := parseRoads(os.Getenv("DELTA_NETWATCH_ROADS"))
		if err != nil {
			return err
		}
		tsLog, err := openLogFile(filepath.Join(logDir, "tailscale.log"), maxLogBytes)
		if err != nil {
			return err
		}
		defer tsLog.Close()
		log.Info("tailnet mode: Delta contacts the tailnet's control server and the DERP relays it names, and nothing else",
			"control_server", controlServer(s.controlURL), "log_upload", logUploadWords(s.uploadLogs), "tailscale_log", filepath.Join(logDir, "tailscale.log"))
		tsLogf := func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			// The file is best effort: tsnet's own lines are for
			// debugging, and Delta's log says what matters.
			line = time.Now().Format(time.RFC3339Nano) + " " + strings.TrimSuffix(line, "\n") + "\n"
			_, _ = io.WriteString(tsLog, line)
			if s.verbose {
				_, _ = io.WriteString(stderr, "tailscale: "+line)
			}
		}
		// Some of Tailscale's packages write through Go's standard log
		// rather than tsnet's Logf: those lines go to tailscale.log too,
		// never to stderr unless --verbose (the README says so).
		prevOut, prevFlags := stdlog.Writer(), stdlog.Flags()
		stdlog.SetFlags(0)
		stdlog.SetOutput(logfWriter(tsLogf))
		defer func() { stdlog.SetOutput(prevOut); stdlog.SetFlags(prevFlags) }()
		if node, err = tailnet.New(tailnet.Config{StateDir: s.stateDir, Hostname: s.hostname, ControlURL: s.controlURL,
			AuthKey: os.Getenv("DELTA_TS_AUTHKEY"), LANPort: s.lanPort, LANPortFallback: s.defaultLANPort, LANAddrs: s.lanAddrs, Allow: fc.Allow, AllowWake: fc.WakeOnLAN,
			Roads: override, Logger: log, Version: version, UploadLogs: s.uploadLogs, TSLogf: tsLogf,
			AfterRound: func() {
				select {
				case rounds <- struct{}{}:
				default: // one is pending already
				}
			}}); err != nil {
			return err
		}
		if err := node.Start(); err != nil {
			return err
		}
		node.Attach(&gcfg)
	}
	g, err := gateway.New(gcfg)
	if err == nil {
		err = g.Start()
	}
	if err != nil {
		if node != nil {
			node.Close()
		}
		return err
	}
	if node != nil {
		for _, n := range node.Notices() {
			g.AddNotice(n)
		}
	}
	// The identity is made by now: kept out of Time Machine (macOS).
	if err := statedir.ExcludeFromBackups(statedir.BackupExclusions(s.stateDir)); err != nil {
		log.Warn("could not keep this computer's identity out of Time Machine: a restore onto another Mac is caught at its start instead", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	gcpace.Enable()                    // the collector paced by load, unless GOGC is set
	go trimWhenQuiet(ctx, log, rounds) // ends with ctx (stop cancels it); settles the pace
	sd := &ui.Shutdown{Close: func() error {
		log.Info("stopping: listeners close first, calls in flight are recorded")
		err := g.Close()
		if node != nil {
			if cerr := node.Close(); err == nil {
				err = cerr
			}
		}
		return err
	}}
	if withTray {
		runTray(ctx, g, log, sd, s.stateDir)
	} else {
		<-ctx.Done()
	}
	return sd.Finish()
}

// bringForward is a second Delta for the same user (its state folder is
// held): it opens the running one's status page (prints its link without
// a desktop) and exits 0, so that launchd (KeepAlive on failure) does not
// start it again and again. If the running one does not answer, the
// refusal stands (err).
func bringForward(held *statedir.HeldError, desktop bool, stderr io.Writer, err error) error {
	c, kerr := kit.Open(held.Dir)
	if kerr != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	link, lerr := c.LoginLink(ctx)
	if lerr != nil {
		return fmt.Errorf("%w (and it did not answer: %v)", err, lerr)
	}
	who := c.URL()
	if held.Local != nil {
		who = fmt.Sprintf("pid %d, %s", held.Local.PID, held.Local.URL)
	}
	fmt.Fprintf(stderr, "Delta is already running on the state folder %s (%s); this one exits with 0, as a second start is not a failure (launchd would start it again). Its status page: %s\n", held.Dir, who, link)
	if desktop {
		if oerr := ui.OpenURL(link); oerr != nil {
			fmt.Fprintf(stderr, "could not open a browser (%v); open the link above within 60 s\n", oerr)
		}
	}
	return nil
}

// exitWait bounds how long the tray's exit callback (the system's
// terminate on macOS: logout, restart) waits for the gateway to close
// before AppKit exits the process: calls in flight are recorded by then,
// or recovered at the next start.
const exitWait = 10 * time.Second

// runTray runs the menu and notifications on the main goroutine until Quit
// or ctx ends (a signal), and waits for them to stop.
func runTray(ctx context.Context, g *gateway.Gateway, log *slog.Logger, sd *ui.Shutdown, stateDir string) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		ui.QuitSystray(sd)
	}()
	onExit := func() {
		// The system's terminate (macOS), or systray's own exit: AppKit
		// exit()s the process when this returns. No tray call here.
		sd.Begin()
		cancel()
		if err, done := sd.FinishWithin(exitWait); !done {
			log.Error("the gateway did not close within the exit's limit; what it had not recorded is recovered at the next start", "limit", exitWait)
		} else if err != nil {
			log.Error("closing the gateway", "err", err)
		}
	}
	// The notifications' sender comes before the tray, on the main
	// goroutine: on macOS it sets the notification center's delegate, which
	// Apple asks for before the application finishes launching, or a click
	// on a notification that launched Delta is lost (review A8). Clicks wait
	// in notes until the menu runs.
	notes := make(chan ui.Action, 16)
	sender := ui.SystemSender(log, notes)
	defer sender.Close()
	// A double-click on Delta.app while it runs opens the status page.
	ui.HandleReopen(log, notes)
	ui.RunSystray(log, sd, func(t *ui.Systray) {
		log.Info("tray is up")
		app := &ui.App{Source: g, Tray: t, Log: log, Quit: func() { ui.QuitSystray(sd) }, Quitting: sd.Quitting, Notes: notes,
			Report: func(ctx context.Context) (string, error) { return menuBugreport(ctx, stateDir) }, Uninstall: menuUninstall()}
		// The peers' apps and the forwards to them: the menu is a client
		// of this Delta's local API for them, as the page is.
		if kc, err := kit.Open(stateDir); err != nil {
			log.Warn("the menu lists no peers' apps: it could not open this Delta's local API", "err", err)
		} else {
			app.PeerApps = kc.PeerApps
			app.Forward = func(ctx context.Context, peer, name string) (*localapi.Forward, error) {
				return kc.PutForward(ctx, peer, name, localapi.ForwardRequest{})
			}
			app.AnswerPair = func(ctx context.Context, id, action string) error {
				if action == localapi.PairIgnore {
					return kc.IgnorePair(ctx, id)
				}
				_, err := kc.AcceptPair(ctx, id, "")
				return err
			}
		}
		app.Sender = sender
		wg.Go(func() { app.Run(ctx) })
		n := &ui.Notifier{Events: g.CallEvents(), Sender: sender, Log: log}
		wg.Go(func() {
			if err := n.Run(ctx); err != nil {
				log.Error("notifications stopped", "err", err)
			}
		})
	}, onExit)
	cancel()
	wg.Wait()
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// maxLogBytes bounds each log file (delta.log, tailscale.log); the one
// before is kept as .1.
const maxLogBytes = 10 << 20

// crashFile is where a crash's traceback goes, in the log folder.
const crashFile = cli.CrashFile

// setCrashOutput sends the runtime's crash output to path too, appended.
func setCrashOutput(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close() // SetCrashOutput keeps a duplicate of its descriptor
	return debug.SetCrashOutput(f, debug.CrashOptions{})
}

// controlServer names the control server tailnet mode contacts.
func controlServer(flagURL string) string {
	if flagURL != "" {
		return flagURL
	}
	return ipn.DefaultControlURL + " (Tailscale's; --control-url names another, such as Headscale)"
}

// logUploadWords says whether tsnet uploads its log to Tailscale.
// logfWriter writes each Write as one line through a Logf.
type logfWriter func(format string, args ...any)

func (w logfWriter) Write(p []byte) (int, error) {
	w("%s", p)
	return len(p), nil
}

func logUploadWords(on bool) string {
	if on {
		return "on (--tailscale-log-upload): the tailnet's software also sends its log to Tailscale's log server"
	}
	return "off: nothing is sent to Tailscale's log server (--tailscale-log-upload turns it on)"
}

// parseRoads reads DELTA_NETWATCH_ROADS, "eth1=thunderbolt,eth2=lan": the
// road of interfaces netwatch would classify otherwise.
func parseRoads(v string) (map[string]roads.Road, error) {
	if v == "" {
		return nil, nil
	}
	m := map[string]roads.Road{}
	for item := range strings.SplitSeq(v, ",") {
		name, road, ok := strings.Cut(strings.TrimSpace(item), "=")
		r, err := roads.Parse(road)
		if !ok || name == "" || err != nil || !r.Local() {
			return nil, fmt.Errorf("DELTA_NETWATCH_ROADS: %q is not interface=ROAD with a local road (%s)", item, roadfacts.Names(roadfacts.LocalRoads...))
		}
		m[name] = r
	}
	return m, nil
}

// firstStart says whether dir holds no journal yet (Delta's first start
// with it), and whether something prepared it all the same (delta init
// wrote its config.json, or its identity is made): only an unprepared one
// is worth a warning that a mistyped folder may be meant.
func firstStart(dir string) (fresh, prepared bool) {
	if _, err := os.Stat(filepath.Join(dir, statedir.JournalFile)); !errors.Is(err, os.ErrNotExist) {
		return false, true
	}
	for _, f := range append([]string{statedir.ConfigFile}, statedir.IdentityFiles...) {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true, true
		}
	}
	return true, false
}
