package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestStopWithCallInFlight: SIGTERM while a call waits for its owner. The
// listeners close first; the call is ended, recorded as outcome unknown and
// the app told so before Delta exits (cleanly, status 0); after a restart
// it is reconciled, never resent.
func TestStopWithCallInFlight(t *testing.T) {
	laptop, _, app := startPair(t)

	const id = "stop-1"
	got := laptop.callAsync("/v1/peers/studio/notes/hold/s", id, "60")
	app.WaitArrived(t, id)
	laptop.cmd.Process.Signal(syscall.SIGTERM)
	r := <-got
	if r.Outcome() != "outcome_unknown" || !strings.Contains(r.Err.Detail, "Delta was stopping while the call waited for studio's answer") {
		t.Errorf("the app was told %d %q: %s", r.Status, r.Outcome(), r.Body)
	}
	if err := laptop.cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if !laptop.log.Contains("stopping: listeners close first") {
		t.Errorf("the log does not say how it stopped")
	}

	laptop.start(t)
	if c := laptop.c.GetCall(t, id, 0); c.State != "unknown" {
		t.Fatalf("after the restart the call is %s, want unknown", c.State)
	}
	app.Release("/hold/s")
	if c := laptop.c.GetCall(t, id, 60); c.State != "carried_out" {
		t.Fatalf("the call settled %s, want carried_out", c.State)
	}
	if n := app.RequestsFor(id); n != 1 {
		t.Errorf("the owner's app saw the call %d times, want 1", n)
	}
}
