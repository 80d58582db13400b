package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"tailscale.com/envknob"
	"tailscale.com/tsnet"
	"tailscale.com/types/logger"

	"github.com/delta-roads/delta/gateway/tailnet/loopnet"
)

// The tailnet's floor: a bare tsnet node, started as Delta starts its own
// (its state in a folder, no log upload, one listener on the tailnet), in
// a loopback tailnet of its own with one peer, and nothing else: no
// roads, no journal, no local API, no tray. An idle Delta with the
// tailnet up cannot cost less than the node it carries; measured in the
// same window as the Delta, it shows what of the idle goal is in reach.

// tsnetFloorArg, as the first argument, makes this program a bare tsnet
// node: bench tsnet-floor CONTROL-URL DIR HOSTNAME.
const tsnetFloorArg = "tsnet-floor"

// tsnetFloorMain is a bare tsnet node's process: it says "up" once the
// node is running and serves until it is told to stop.
func tsnetFloorMain(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: bench tsnet-floor CONTROL-URL DIR HOSTNAME")
	}
	envknob.SetNoLogsNoSupport()
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
	<-ctx.Done()
	ln.Close()
	return nil
}

// startTSNetFloor starts two bare tsnet nodes in a loopback tailnet of
// their own and returns the first, to be measured like a Delta, and how
// to stop both and their tailnet (once, whenever called again).
func startTSNetFloor(root string, procs *[]*deltaProc) (*deltaProc, func(), error) {
	tn, err := loopnet.Start(loopnet.Options{})
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		tn.Close()
		return nil, nil, err
	}
	var nodes []*deltaProc
	for _, name := range []string{"floor-laptop", "floor-studio"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tn.Close()
			return nil, nil, err
		}
		out, err := os.Create(dir + ".out")
		if err != nil {
			tn.Close()
			return nil, nil, err
		}
		cmd := exec.Command(exe, tsnetFloorArg, tn.URL, dir, name)
		cmd.Env = append(os.Environ(), "TS_NO_LOGS_NO_SUPPORT=true")
		cmd.Stdout, cmd.Stderr = out, out
		p := &deltaProc{name: name, dir: dir, cmd: cmd, done: make(chan struct{}), started: time.Now()}
		if err := cmd.Start(); err != nil {
			out.Close()
			tn.Close()
			return nil, nil, err
		}
		*procs = append(*procs, p)
		go func() { cmd.Wait(); out.Close(); close(p.done) }()
		nodes = append(nodes, p)
	}
	for _, p := range nodes {
		if err := waitCond(60*time.Second, p.name+" up", func() bool {
			b, _ := os.ReadFile(p.dir + ".out")
			return bytes.HasPrefix(b, []byte("up\n")) || bytes.Contains(b, []byte("\nup\n"))
		}); err != nil {
			tn.Close()
			return nil, nil, fmt.Errorf("a bare tsnet node: %w (its output: %s.out)", err, p.dir)
		}
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
