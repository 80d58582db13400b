package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/delta-roads/delta/app/cli"
)

// macUninstaller is the uninstall script inside the installed bundle.
const macUninstaller = "/Applications/Delta.app/Contents/Resources/uninstall.sh"

type uninstallOpts struct{ purge, yes *bool }

// macDefaultState is the state folder and logs uninstall.sh --purge
// removes: the invoking user's default ones, never another folder.
const macDefaultState = "~/Library/Application Support/Delta"

// uninstallPlan is what `delta uninstall` does on goos: the command to run
// (nil: none), or what to tell the person instead. On a Mac, --purge
// removes the default state folder only (uninstall.sh, as root, removes
// no folder it was named): a --state-dir elsewhere is said to stay
// (issue 64, M12: the words named it as removed).
func uninstallPlan(goos string, purge bool, stateDir string) (argv []string, words string) {
	switch goos {
	case "darwin":
		argv = []string{"sudo", "/bin/sh", macUninstaller}
		if !purge {
			return argv, "removes Delta.app and its LaunchAgent; your state folder " + stateDir + " stays (--purge removes it)"
		}
		argv = append(argv, "--purge")
		words = "removes Delta.app and its LaunchAgent, and your state folder " + macDefaultState + " with ~/Library/Logs/Delta"
		if home, err := os.UserHomeDir(); err == nil && filepath.Clean(stateDir) != filepath.Join(home, "Library", "Application Support", "Delta") {
			words += "; " + stateDir + " (your --state-dir) stays: remove it yourself (rm -rf)"
		}
		return argv, words
	case "linux":
		w := "Delta from the .deb is removed by the package manager: sudo apt remove delta (or sudo dpkg -r delta). "
		if purge {
			return nil, w + "Then remove the state folder yourself: rm -rf " + stateDir
		}
		return nil, w + "Your state folder " + stateDir + " stays."
	}
	return nil, "Delta has no installer on " + goos + ": remove the delta binary and, if you like, " + stateDir
}

// uninstallCommand is `delta uninstall`.
var uninstallCommand = &cli.Command{Name: "uninstall", Args: "[--purge] [--yes]", Summary: "remove Delta from this computer (the state folder only with --purge)",
	Flags: func(fs *flag.FlagSet) any {
		return &uninstallOpts{purge: fs.Bool("purge", false, "also remove the state folder: the journal, this computer's identity and its logs"),
			yes: fs.Bool("yes", false, "do not ask")}
	},
	Run: func(e *cli.Env, o any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "uninstall: unexpected argument %q", args[0])
		}
		opts := o.(*uninstallOpts)
		argv, words := uninstallPlan(runtime.GOOS, *opts.purge, e.StateDir)
		if argv == nil {
			fmt.Fprintln(e.Stdout, words)
			return nil
		}
		if _, err := os.Stat(macUninstaller); err != nil {
			return cli.Exitf(cli.ExitFailed, "uninstall: %s is not there: Delta.app was not installed from the .pkg (%v)", macUninstaller, err)
		}
		if !*opts.yes {
			fmt.Fprintf(e.Stdout, "This %s. Go on? [y/N] ", words)
			line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				return cli.Exitf(cli.ExitFailed, "uninstall: nothing was removed")
			}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.Stdout, e.Stderr
		if err := cmd.Run(); err != nil {
			return cli.Exitf(cli.ExitFailed, "uninstall: %s: %v", strings.Join(argv, " "), err)
		}
		return nil
	}}
