package main

import (
	"flag"

	"github.com/delta-roads/delta/app/cli"
)

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
