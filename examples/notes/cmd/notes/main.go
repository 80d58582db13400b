// Command notes runs the notes owner app (package notes) against this
// computer's Delta: it listens on loopback, registers itself as the app
// "notes" and serves until interrupted, unregistering on the way out.
//
//	go run ./examples/notes/cmd/notes [--state-dir DIR] [--name notes]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/delta-roads/delta/examples/notes"
	"github.com/delta-roads/delta/kit"
)

func main() {
	stateDir := flag.String("state-dir", "", "the running Delta's state folder (default DELTA_STATE_DIR, else Delta's default)")
	name := flag.String("name", "notes", "the app's name at Delta")
	listen := flag.String("listen", "127.0.0.1:0", "the loopback address to serve on")
	flag.Parse()
	if err := run(*stateDir, *name, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "notes:", err)
		os.Exit(1)
	}
}

func run(stateDir, name, listen string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := kit.Open(stateDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	reg, err := c.RegisterApp(ctx, name, "http://"+ln.Addr().String())
	if err != nil {
		ln.Close()
		return fmt.Errorf("register with Delta: %w", err)
	}
	fmt.Printf("notes: serving on %s as the app %q of the Delta in %s\n", ln.Addr(), name, c.StateDir)
	srv := &http.Server{Handler: (&notes.App{}).Handler(reg.Secret)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return c.RemoveApp(context.Background(), name)
}
