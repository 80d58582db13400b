package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/delta-roads/delta/gateway/statedir"
	"github.com/delta-roads/delta/ui"
)

// runOpen is `delta open`: it asks the running Delta for a one-time login
// link to its status page, prints it, and opens it in the browser.
func runOpen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("delta open", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", env("DELTA_STATE_DIR", defaultStateDir()), "the running Delta's state folder (DELTA_STATE_DIR)")
	printOnly := fs.Bool("print", false, "print the link only; do not open a browser")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("open: unexpected argument %q (delta open [--state-dir DIR] [--print])", fs.Arg(0))
	}
	local, err := statedir.ReadLocal(*stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open: Delta is not running for state folder %s (it has no local.json); start it first", *stateDir)
	}
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	tok, err := statedir.ReadToken(*stateDir)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	req, _ := http.NewRequest("POST", local.URL+"/v1/login-link", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("open: Delta at %s did not answer (is it still running?): %w", local.URL, err)
	}
	defer resp.Body.Close()
	var link struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	}
	json.NewDecoder(resp.Body).Decode(&link)
	if resp.StatusCode != http.StatusOK || link.URL == "" {
		return fmt.Errorf("open: Delta at %s refused a login link: %s %s", local.URL, resp.Status, link.Detail)
	}
	fmt.Fprintln(stdout, link.URL)
	if *printOnly {
		return nil
	}
	if err := ui.OpenURL(link.URL); err != nil {
		fmt.Fprintf(stderr, "delta open: could not open a browser (%v); open the link above within 60 s\n", err)
	}
	return nil
}
