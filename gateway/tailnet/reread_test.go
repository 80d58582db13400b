package tailnet

import (
	"testing"
	"time"

	"tailscale.com/tailcfg"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/routes"
)

// TestRereadDue: a running node's timed re-read of the tailnet's status
// is made only when something crossed the tailnet road since the last one
// (a use or a probe answered), while an online node has not answered
// hello, or rescanIdle after the last; before the node runs, always.
func TestRereadDue(t *testing.T) {
	book := routes.New(nil, nil)
	tail := roads.Candidate{Peer: "studio", Road: roads.Tailnet, Address: "100.64.0.2:7421"}
	book.Set("studio", []roads.Candidate{tail})
	studio := &peer{node: "n2", online: true, name: "studio", hello: &Hello{Name: "studio"}}
	n := &Node{book: book, backend: "Starting",
		peers: map[string]*peer{"studio": studio}, byNode: map[tailcfg.StableNodeID]*peer{"n2": studio}}

	read := time.Now()
	if !n.rereadDue(read) {
		t.Error("a node not running yet: the timed re-read is skipped; want it made")
	}
	n.backend = "Running"
	if n.rereadDue(read) {
		t.Error("running, nothing crossed the tailnet since the last re-read: want it skipped")
	}
	if !n.rereadDue(read.Add(-rescanIdle)) {
		t.Errorf("running, the last re-read %v ago: want it made", rescanIdle)
	}

	// An online node that has not answered hello is asked again at the
	// re-read, as before.
	phone := &peer{node: "n3", online: true}
	n.byNode["n3"] = phone
	if !n.rereadDue(read) {
		t.Error("an online node without hello: want the re-read made")
	}
	phone.online = false
	if n.rereadDue(read) {
		t.Error("that node offline: want the re-read skipped")
	}

	// The tailnet road answered (a use or a probe) after the last
	// re-read: its path may have changed.
	book.Report(tail, 3*time.Millisecond, nil)
	if !n.rereadDue(read) {
		t.Error("the tailnet road answered since the last re-read: want it made")
	}
	if n.rereadDue(time.Now()) {
		t.Error("nothing since a re-read made after that answer: want it skipped")
	}
}
