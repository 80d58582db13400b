package main

import (
	"time"

	"github.com/delta-roads/delta/app/cli"
)

// What this package's tests use of the command line, which lives in
// app/cli: its names here as they were before it moved there.

type answerJSON = cli.AnswerJSON

// commands are delta's commands, in the order -h lists them.
var commands = func() (out []struct{ name string }) {
	for _, c := range program.Commands {
		out = append(out, struct{ name string }{c.Name})
	}
	return out
}()

func lastCrash(stateDir string) (time.Time, string) { return cli.LastCrash(stateDir) }

func needsNewline(terminal bool, written int64, last byte) bool {
	return cli.NeedsNewline(terminal, written, last)
}

func withoutPSN(goos string, args []string) []string { return cli.WithoutPSN(goos, args) }

func findCommand(args []string) (string, []string, error) { return program.FindCommand(args) }
