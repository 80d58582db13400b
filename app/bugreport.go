package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/delta-roads/delta/app/bugreport"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/ui"
)

// bugreportCommand is `delta bugreport`, after `tailscale bugreport`: one
// file a person can attach to a report, with what a developer needs to
// find a fault (the logs, the last crash's traceback, the status, the
// versions) and none of what must stay on the computer: the local token,
// the network key and forward secrets are replaced wherever they appear,
// and no call's body is in a log to begin with (Delta logs ids, paths and
// outcomes).
var bugreportCommand = &cli.Command{Name: "bugreport", Args: "[--out FILE]",
	Summary: "bundle the logs, the last crash, status --json and the versions into one file to attach to a report (no tokens, keys or bodies)",
	Flags: func(fs *flag.FlagSet) any {
		return fs.String("out", "", "the file to write (default delta-bugreport-DATE-TIME.tar.gz here)")
	},
	Run: func(e *cli.Env, o any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "bugreport: unexpected argument %q", args[0])
		}
		out := *o.(*string)
		if out == "" {
			out = "delta-bugreport-" + time.Now().Format("20060102-150405") + ".tar.gz"
		}
		parts, secrets := bugreport.Parts(e, version)
		if err := bugreport.Write(out, parts, secrets); err != nil {
			return cli.Exitf(cli.ExitFailed, "bugreport: %v", err)
		}
		fmt.Fprintf(e.Stdout, "Wrote %s:\n", out)
		for _, p := range parts {
			fmt.Fprintf(e.Stdout, "  %-16s %s\n", p.Name, p.Note)
		}
		fmt.Fprintln(e.Stdout, "The local token, the network key and forward secrets are replaced by [redacted]; no call's body is in it. Look it over before you send it.")
		return nil
	}}

// menuBugreport is the menu's "Report a Problem…": the report delta
// bugreport writes, on the Desktop (else in the home folder), for a person
// who never opens Terminal (issue 64, M4). Its path is returned for the
// menu to show it.
func menuBugreport(ctx context.Context, stateDir string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder to write the report in: %w", err)
	}
	path := reportPath(home, time.Now(), func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() })
	parts, secrets := bugreport.Parts(&cli.Env{Ctx: ctx, StateDir: stateDir, Stdout: io.Discard, Stderr: io.Discard}, version)
	if err := bugreport.Write(path, parts, secrets); err != nil {
		return "", err
	}
	return path, nil
}

// reportPath is where the menu writes a report made at now: on the
// Desktop when there is one, else in the home folder.
func reportPath(home string, now time.Time, isDir func(string) bool) string {
	dir := filepath.Join(home, "Desktop")
	if !isDir(dir) {
		dir = home
	}
	return filepath.Join(dir, "Delta bug report "+now.Format("2006-01-02 15.04.05")+".tar.gz")
}

// menuUninstall is the menu's "Uninstall Delta…" on a Mac (nil elsewhere:
// a .deb is removed by the package manager): the bundle's uninstaller,
// behind macOS's own administrator prompt. It stops this Delta, which
// must not wait for it: it is started and left to run.
func menuUninstall() func() error {
	if runtime.GOOS != "darwin" {
		return nil
	}
	return func() error {
		name, args := ui.UninstallCommand(macUninstaller)
		cmd := exec.Command(name, args...)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		go cmd.Wait() //nolint:errcheck // it outlives what could read its result: the uninstaller stops this Delta
		return nil
	}
}
