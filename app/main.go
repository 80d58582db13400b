// Command delta runs Delta: the gateway that lets a person's own computers
// talk to each other over whatever road joins them (DESIGN.md).
//
// This package is wiring only: it reads the settings of DESIGN §7 from flags
// and the environment, sets up logging, starts the tailnet node and the
// gateway, runs the menu-bar app (ui) on the main thread unless headless,
// and shuts everything down on Quit, SIGINT or SIGTERM.
//
// `delta open` prints a one-time login link to the running Delta's status
// page and opens it in the browser.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"delta/gateway"
	"delta/gateway/roads"
	"delta/gateway/tailnet"
	"delta/ui"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	run := run
	if len(os.Args) > 1 && os.Args[1] == "open" {
		run = func(args []string, stderr io.Writer) error { return runOpen(args[1:], os.Stdout, stderr) }
	}
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "delta:", err)
		os.Exit(1)
	}
}

// settings are DESIGN §7's, from flags and the environment.
type settings struct {
	stateDir   string
	listen     string
	peerListen string
	headless   bool
	lanPort    int
	controlURL string
	hostname   string
	lanAddrs   []string
}

func parse(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("delta", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.stateDir, "state-dir", env("DELTA_STATE_DIR", defaultStateDir()), "the state folder (DELTA_STATE_DIR)")
	fs.StringVar(&s.listen, "listen", env("DELTA_LISTEN", gateway.DefaultListen), "the local API's loopback address; port 0 takes a free one (DELTA_LISTEN)")
	fs.StringVar(&s.peerListen, "peer-listen", env("DELTA_PEER_LISTEN", ""), "the peer API's plain-TCP address in static mode (DELTA_PEER_LISTEN); default the config's peer_listen, else "+gateway.DefaultPeerListen)
	fs.BoolVar(&s.headless, "headless", os.Getenv("DELTA_HEADLESS") == "1", "everything but the tray (DELTA_HEADLESS=1)")
	lanPort, _ := strconv.Atoi(env("DELTA_LAN_PORT", "7422"))
	fs.IntVar(&s.lanPort, "lan-port", lanPort, "the TLS listener's port on lan and thunderbolt addresses (DELTA_LAN_PORT)")
	fs.StringVar(&s.controlURL, "control-url", env("DELTA_CONTROL_URL", ""), "the tailnet's control server (DELTA_CONTROL_URL)")
	fs.StringVar(&s.hostname, "hostname", env("DELTA_HOSTNAME", ""), "this computer's name on the tailnet (DELTA_HOSTNAME)")
	lanAddrs := fs.String("lan-addrs", env("DELTA_LAN_ADDRS", ""), "comma-separated addresses for the TLS listener, each IP or road=IP (DELTA_LAN_ADDRS); default this computer's lan and thunderbolt interfaces")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected argument %q (delta takes flags, or the subcommand open; see delta -h)", fs.Arg(0))
	}
	if s.stateDir == "" {
		return s, errors.New("no state folder: set --state-dir or DELTA_STATE_DIR (HOME is not set either)")
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

func run(args []string, stderr io.Writer) error {
	s, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return fmt.Errorf("make state folder: %w", err)
	}
	logw, closeLog, err := openLog(s.stateDir, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
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
			log.Info("running headless: " + err.Error() + "; everything but the tray and notifications runs")
		} else if warning != "" {
			log.Warn(warning)
		}
	}

	// The state folder's lock comes before anything else uses the folder.
	lock, err := gateway.LockStateDir(s.stateDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	fc, err := gateway.ReadFileConfig(s.stateDir)
	if err != nil {
		return err
	}
	gcfg := gateway.Config{StateDir: s.stateDir, StateLock: lock, Listen: s.listen, PeerListen: s.peerListen, Logger: log, Version: version}
	var node *tailnet.Node
	if len(fc.Peers) > 0 {
		log.Info("static mode: peers come from config.json; the tailnet is not joined", "peers", len(fc.Peers))
	} else {
		override, err := parseRoads(os.Getenv("DELTA_NETWATCH_ROADS"))
		if err != nil {
			return err
		}
		if node, err = tailnet.New(tailnet.Config{StateDir: s.stateDir, Hostname: s.hostname, ControlURL: s.controlURL,
			AuthKey: os.Getenv("DELTA_TS_AUTHKEY"), LANPort: s.lanPort, LANAddrs: s.lanAddrs, Allow: fc.Allow,
			Roads: override, Logger: log, Version: version}); err != nil {
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
		node.SetGateway(g)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if withTray {
		runTray(ctx, g, log)
	} else {
		<-ctx.Done()
	}
	log.Info("stopping: listeners close first, calls in flight are recorded")
	err = g.Close()
	if node != nil {
		if cerr := node.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// runTray runs the menu and notifications on the main goroutine until Quit
// or ctx ends (a signal), and waits for them to stop.
func runTray(ctx context.Context, g *gateway.Gateway, log *slog.Logger) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		ui.QuitSystray()
	}()
	ui.RunSystray(log, func(t *ui.Systray) {
		log.Info("tray is up")
		app := &ui.App{Gateway: g, Tray: t, Log: log, Quit: ui.QuitSystray}
		wg.Go(func() { app.Run(ctx) })
		n := &ui.Notifier{DB: g.Journal(), Sender: ui.SystemSender(), Log: log}
		wg.Go(func() {
			if err := n.Run(ctx); err != nil {
				log.Error("notifications stopped: " + err.Error())
			}
		})
	})
	cancel()
	wg.Wait()
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// defaultStateDir is DESIGN §7's state folder for this OS.
func defaultStateDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "Delta")
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "delta")
	}
	return filepath.Join(home, ".local", "state", "delta")
}

// openLog opens the log file (macOS: ~/Library/Logs/Delta; elsewhere the
// state folder) and returns a writer to it and to stderr.
func openLog(stateDir string, stderr io.Writer) (io.Writer, func(), error) {
	dir := stateDir
	if runtime.GOOS == "darwin" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, "Library", "Logs", "Delta")
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("make log folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "delta.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	return io.MultiWriter(stderr, f), func() { f.Close() }, nil
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
		if !ok || name == "" || err != nil || r == roads.Tailnet {
			return nil, fmt.Errorf("DELTA_NETWATCH_ROADS: %q is not interface=thunderbolt or interface=lan", item)
		}
		m[name] = r
	}
	return m, nil
}
