package main

import (
	"flag"

	"github.com/delta-roads/delta/app/cli"
)

// Exit codes and the command line's shapes, as app/cli has them (its
// commands and this package's speak the same to scripts).
const (
	exitOK          = cli.ExitOK
	exitFailed      = cli.ExitFailed
	exitUsage       = cli.ExitUsage
	exitDeltaDown   = cli.ExitDeltaDown
	exitUnavailable = cli.ExitUnavailable
	exitUnknown     = cli.ExitUnknown
	exitConflict    = cli.ExitConflict
	exitAppError    = cli.ExitAppError
	exitNeedsPerson = cli.ExitNeedsPerson
	exitCut         = cli.ExitCut
	exitNotNow      = cli.ExitNotNow
	exitStale       = cli.ExitStale
)

type (
	command = cli.Command
	env     = cli.Env
)

func exitf(code int, format string, args ...any) error { return cli.Exitf(code, format, args...) }

// program is delta: Delta itself (run, the daemon: this package) when no
// command is given, and its command line, the commands of app/cli that
// talk to the running Delta, then this package's that act on the state
// folder and the install.
var program = &cli.Program{
	Run:   run,
	Flags: func(fs *flag.FlagSet) { serverFlags(fs, &settings{}) },
}

func init() {
	cmds := []*cli.Command{cli.RunCommand}
	cmds = append(cmds, cli.Status...)
	cmds = append(cmds, cli.Calls...)
	cmds = append(cmds, cli.Requests...)
	program.Commands = append(cmds, openCommand, versionCommand, demoCommand, initCommand, idCommand, pairCommandDef, uninstallCommand, bugreportCommand)
}
