package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"tailscale.com/envknob"
	"tailscale.com/logtail"
	"tailscale.com/tsnet"
	"tailscale.com/types/logger"

	"github.com/delta-roads/delta/gateway/modes/tailnet/loopnet"
)

// The tailnet's floor: a bare tsnet node, started as Delta starts its own
// (its state in a folder, no log upload, one listener on the tailnet), in
// a loopback tailnet of its own with one peer, and nothing else: no
// roads, no journal, no local API, no tray. An idle Delta with the
// tailnet up cannot cost less than the node it carries; measured in the
// same window as the Delta, it shows what of the idle goal is in reach.
// A second pair does the same and also opens a connection to its peer
// over the tailnet every 30 s, as often as Delta checks a road it
// believes up (DESIGN §5): what that traffic alone costs an idle node.

// tsnetFloorArg, as the first argument, makes this program a bare tsnet
// node: bench tsnet-floor CONTROL-URL DIR HOSTNAME [EVERY], EVERY how
// often it connects to its peer (none if absent).
const tsnetFloorArg = "tsnet-floor"

// floorProbeEvery is how often the probed pair connects to its peer: the
// route belief's lifetime, after which Delta checks a road again.
const floorProbeEvery = 30 * time.Second

// tsnetFloorMain is a bare tsnet node's process: it says "up" once the
// node is running and serves until it is told to stop.
func tsnetFloorMain(args []string) error {
	if len(args) != 3 && len(args) != 4 {
		return errors.New("usage: bench tsnet-floor CONTROL-URL DIR HOSTNAME [EVERY]")
	}
	var every time.Duration
	if len(args) == 4 {
		var err error
		if every, err = time.ParseDuration(args[3]); err != nil || every <= 0 {
			return fmt.Errorf("EVERY %q is not a duration", args[3])
		}
	}
	envknob.SetNoLogsNoSupport()
	logtail.Disable() // as Delta does (gateway/modes/tailnet): no log buffered for an upload refused
	srv := &tsnet.Server{Dir: args[1], ControlURL: args[0], Hostname: args[2], Logf: logger.Discard, UserLogf: logger.Discard}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	upCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := srv.Up(upCtx); err != nil {
		return err
	}
	ln, err := srv.Listen("tcp", ":80")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	fmt.Println("up")
	if every > 0 {
		lc, err := srv.LocalClient()
		if err != nil {
			return err
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				ln.Close()
				return nil
			case <-t.C:
			}
			st, err := lc.Status(ctx)
			if err != nil {
				continue
			}
			for _, ps := range st.Peer {
				if len(ps.TailscaleIPs) > 0 {
					if c, err := srv.Dial(ctx, "tcp", net.JoinHostPort(ps.TailscaleIPs[0].String(), "80")); err == nil {
						c.Close()
					}
				}
			}
		}
	}
	<-ctx.Done()
	ln.Close()
	return nil
}

// startTSNetFloor starts two bare tsnet nodes in a loopback tailnet of
// their own (each connecting to the other every "every", if not 0) and
// returns the first, to be measured like a Delta, and how to stop both
// and their tailnet (once, whenever called again).
func startTSNetFloor(root, prefix string, every time.Duration, procs *[]*deltaProc) (*deltaProc, func(), error) {
	tn, err := loopnet.Start(loopnet.Options{})
	if err != nil {
		return nil, nil, err
	}
	var nodes []*deltaProc
	for _, name := range []string{prefix + "laptop", prefix + "studio"} {
		p, err := spawnBareNode(root, name, tn.URL, every, procs)
		if err != nil {
			tn.Close()
			return nil, nil, err
		}
		nodes = append(nodes, p)
	}
	tn.SameUserAll()
	var once sync.Once
	return nodes[0], func() {
		once.Do(func() {
			for _, p := range nodes {
				p.stop()
			}
			tn.Close()
		})
	}, nil
}

// spawnBareNode starts a bare tsnet node process named name in the
// tailnet at controlURL (connecting to its peer every every, if not 0)
// and waits until it is up.
func spawnBareNode(root, name, controlURL string, every time.Duration, procs *[]*deltaProc) (*deltaProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	argv := []string{exe, tsnetFloorArg, controlURL, dir, name}
	if every > 0 {
		argv = append(argv, every.String())
	}
	p, err := spawn(name, dir, argv, nil, procs)
	if err != nil {
		return nil, err
	}
	stopped := false
	err = waitCond(60*time.Second, p.name+" up", func() bool {
		select {
		case <-p.done:
			stopped = true
			return true
		default:
		}
		b, _ := os.ReadFile(p.dir + ".out")
		return bytes.HasPrefix(b, []byte("up\n")) || bytes.Contains(b, []byte("\nup\n"))
	})
	if err == nil && stopped {
		err = errors.New("it stopped before it was up")
	}
	if err != nil {
		return nil, fmt.Errorf("a bare tsnet node: %w (its output: %s.out)", err, p.dir)
	}
	return p, nil
}
