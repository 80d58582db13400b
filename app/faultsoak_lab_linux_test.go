package main

import (
	"math/rand/v2"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestFaultSoakLab is the fault soak on the lab's two computers in tailnet
// mode (thunderbolt, lan and the tailnet between them, pinned TLS and
// tickets), with the lab's faults besides the soak's own: the thunderbolt
// cable pulled, the lan silenced, the caller's tailnet cut, each for up to
// 3 s. It needs root (the lab's namespaces), and skips without.
func TestFaultSoakLab(t *testing.T) {
	run := soakDuration(t, 60*time.Second)
	l := newLab(t)
	laptop := l.start("a", "laptop")
	studio := l.start("b", "studio")
	var ln net.Listener
	if err := nsDo(l.ns("b"), func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	app := startSoakApp(t, ln)
	studio.register(t, "notes", app.URL)
	laptop.waitRoad(t, "studio", "thunderbolt", "up")
	laptop.waitRoad(t, "studio", "lan", "up")
	t.Cleanup(func() { // the lab as it was, whatever a fault left
		l.cable(true)
		exec.Command("ip", "netns", "exec", l.ns("b"), "nft", "delete", "table", "netdev", "silence").Run()
		l.wan("a", true)
	})
	pause := func() { time.Sleep(time.Duration(rand.IntN(3000)) * time.Millisecond) } // the fault's length
	faultSoak(t, soakSetup{run: run, laptop: laptop, studio: studio, app: app,
		afterStart: func(p *proc) {
			gatewaytest.WaitFor(t, 60*time.Second, p.name+" logged in again", func() bool { return p.status(t).Tailnet.State == "Running" })
		},
		extra: map[string]func(){
			"thunderbolt cable pulled for up to 3 s": func() { l.cable(false); pause(); l.cable(true) },
			"lan silenced at the owner for up to 3 s": func() {
				l.silence("b", "lan0", true)
				pause()
				l.silence("b", "lan0", false)
			},
			"the caller's tailnet cut for up to 3 s": func() { l.wan("a", false); pause(); l.wan("a", true) },
		}})
}
