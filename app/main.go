// Command delta runs Delta: the gateway that lets a person's own computers
// talk to each other over whatever road joins them (DESIGN.md).
//
// This package is wiring only: it reads the settings of DESIGN §7 from flags
// and the environment, sets up logging, starts a gateway.Gateway and stops
// it on SIGINT or SIGTERM.
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
	"syscall"

	"delta/gateway"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
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
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected argument %q (delta takes flags only; see delta -h)", fs.Arg(0))
	}
	if s.stateDir == "" {
		return s, errors.New("no state folder: set --state-dir or DELTA_STATE_DIR (HOME is not set either)")
	}
	if s.lanPort < 1 || s.lanPort > 65535 {
		return s, fmt.Errorf("--lan-port %d is not a port number from 1 to 65535", s.lanPort)
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
	if !s.headless {
		log.Info("running headless: the tray is not part of this build yet")
	}
	if s.controlURL != "" || s.hostname != "" {
		log.Info("--control-url and --hostname take effect with the tailnet road; peers come from config.json in static mode")
	}

	g, err := gateway.New(gateway.Config{StateDir: s.stateDir, Listen: s.listen, PeerListen: s.peerListen, Logger: log, Version: version})
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("stopping: listeners close first, calls in flight are recorded")
	return g.Close()
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
