package main

import (
	"strings"
	"testing"
	"time"
)

// TestDemoPauseOffATerminal: without a terminal (stdin /dev/null, output
// a pipe) the tour's pause asks for no Enter and ends its line, so that
// the next line does not run into it (issue 36).
func TestDemoPauseOffATerminal(t *testing.T) {
	var b strings.Builder
	d := &demo{out: &b, nap: time.Millisecond}
	d.pause("a read")
	d.say("next")
	if b.String() != "   … a read\nnext\n" {
		t.Errorf("the demo off a terminal wrote %q", b.String())
	}
}
