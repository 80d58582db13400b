package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// The sleeping peer (issue 18), in the lab: studio silent on every road.
// Figures are logged ("LAB …", docs/benchmarks.md); what is asserted is
// how many connects were made and what the callers were told.

var labSilentIfaces = []string{"thunderbolt0", "lan0", "wan0"}

// asleep makes studio silent on every interface: everything arriving is
// dropped, except Wake-on-LAN packets (UDP port 9), and each TCP connect's
// source port is kept in a set, so that connects can be counted.
func (l *lab) asleep(t *testing.T, on bool) {
	for _, ifc := range labSilentIfaces {
		tbl := "sleep" + ifc
		if !on {
			nft(t, l.ns("b"), "delete table netdev "+tbl)
			continue
		}
		nft(t, l.ns("b"), fmt.Sprintf(`add table netdev %[1]s
add chain netdev %[1]s in { type filter hook ingress device %[2]q priority 0; }
add set netdev %[1]s syns { type inet_service; }
add rule netdev %[1]s in udp dport 9 accept
add rule netdev %[1]s in tcp flags & (syn|ack) == syn add @syns { tcp sport }
add rule netdev %[1]s in drop`, tbl, ifc))
	}
}

// connects counts the TCP connects that reached studio's ifc while asleep.
func (l *lab) connects(t *testing.T, ifc string) int {
	out, err := runOut("ip", "netns", "exec", l.ns("b"), "nft", "list", "set", "netdev", "sleep"+ifc, "syns")
	if err != nil {
		t.Fatalf("nft list set: %v %s", err, out)
	}
	m := regexp.MustCompile(`elements = \{([^}]*)\}`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	return len(strings.Split(m[1], ","))
}

// metric reads one counter of p's /metrics (0 when absent).
func metric(t *testing.T, p *proc, name string) int {
	m := p.c.Must(t, "GET", "/metrics", nil)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`)
	if v := re.FindSubmatch(m.Body); v != nil {
		n, _ := strconv.Atoi(string(v[1]))
		return n
	}
	return 0
}

// wakeListener receives Wake-on-LAN packets in studio's namespace and
// reports each with the interface it arrived on.
type wakeListener struct {
	pc   *ipv4.PacketConn
	mu   sync.Mutex
	got  map[string][]byte // interface → payload
	done chan struct{}
}

func (l *lab) listenWake(t *testing.T) *wakeListener {
	var c net.PacketConn
	if err := nsDo(l.ns("b"), func() (err error) { c, err = net.ListenPacket("udp4", "0.0.0.0:9"); return err }); err != nil {
		t.Fatal(err)
	}
	w := &wakeListener{pc: ipv4.NewPacketConn(c), got: map[string][]byte{}, done: make(chan struct{})}
	if err := w.pc.SetControlMessage(ipv4.FlagInterface, true); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		buf := make([]byte, 1500)
		for {
			n, cm, _, err := w.pc.ReadFrom(buf)
			if err != nil {
				return
			}
			name := "?"
			if cm != nil {
				if ifc, err := interfaceIn(l.ns("b"), cm.IfIndex); err == nil {
					name = ifc.Name
				}
			}
			w.mu.Lock()
			w.got[name] = append([]byte(nil), buf[:n]...)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.pc.Close(); <-w.done })
	return w
}

func (w *wakeListener) on(ifc string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got[ifc]
}

func interfaceIn(ns string, index int) (ifc *net.Interface, err error) {
	err = nsDo(ns, func() error { ifc, err = net.InterfaceByIndex(index); return err })
	return ifc, err
}

func interfaceByNameIn(ns, name string) (ifc *net.Interface, err error) {
	err = nsDo(ns, func() error { ifc, err = net.InterfaceByName(name); return err })
	return ifc, err
}

// wave sends n reads to studio at once (or spread every `every`), and
// returns how long each waited, what it was told, and when each ended
// relative to the first's start.
func wave(t *testing.T, p *proc, path string, n int, every time.Duration) (waits, ends []time.Duration, bodies []string) {
	waits, ends, bodies = make([]time.Duration, n), make([]time.Duration, n), make([]string, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		if every > 0 && i > 0 {
			time.Sleep(every) // the spread is the scenario, not a wait for a condition
		}
		wg.Go(func() {
			start := time.Now()
			r, err := p.c.Do("GET", "/v1/peers/studio/notes"+path, nil, "Cache-Control", "no-store")
			waits[i], ends[i] = time.Since(start), time.Since(t0)
			if err != nil {
				bodies[i] = err.Error()
			} else {
				bodies[i] = fmt.Sprintf("%d %s %s", r.Status, r.Outcome(), r.Body)
			}
		})
	}
	wg.Wait()
	return waits, ends, bodies
}

func spread(ds []time.Duration) string {
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return fmt.Sprintf("%v…%v", lo.Round(time.Millisecond), hi.Round(time.Millisecond))
}

// sleepingPeer runs the scenarios of a peer asleep on every road.
func sleepingPeer(t *testing.T, l *lab, laptop, studio *proc) {
	awake := func(t *testing.T) {
		for _, road := range []string{"thunderbolt", "lan", "tailnet"} {
			laptop.waitRoad(t, "studio", road, "up")
		}
	}

	t.Run("16 callers at once to a silent peer online on the tailnet", func(t *testing.T) {
		awake(t)
		l.asleep(t, true)
		before := map[string]int{}
		for _, road := range []string{"thunderbolt", "lan", "tailnet"} {
			before[road] = metric(t, laptop, "delta_road_connects_"+road+"_total")
		}
		waits, _, bodies := wave(t, laptop, "/asleep16", 16, 0)
		for i, b := range bodies {
			if strings.HasPrefix(b, "200") {
				t.Errorf("caller %d reached a silent peer: %s", i, b)
			}
		}
		// The callers' connects, from Delta's own count; the SYNs that
		// reached studio include the prober's, once a hold-down ended.
		tb := metric(t, laptop, "delta_road_connects_thunderbolt_total") - before["thunderbolt"]
		lan := metric(t, laptop, "delta_road_connects_lan_total") - before["lan"]
		tail := metric(t, laptop, "delta_road_connects_tailnet_total") - before["tailnet"]
		t.Logf("LAB 16 callers at once, silent on every road, online on the tailnet: waits %s; callers' connects: thunderbolt %d, lan %d, tailnet %d; joined: %d; TCP connects seen by studio (probes included): thunderbolt %d, lan %d",
			spread(waits), tb, lan, tail, metric(t, laptop, "delta_road_connects_joined_thunderbolt_total")+metric(t, laptop, "delta_road_connects_joined_lan_total")+metric(t, laptop, "delta_road_connects_joined_tailnet_total"),
			l.connects(t, "thunderbolt0"), l.connects(t, "lan0"))
		if tb > 1 || lan > 1 || tail > 1 {
			t.Errorf("more than one connect per road while one was in flight: thunderbolt %d, lan %d, tailnet %d", tb, lan, tail)
		}
		l.asleep(t, false)
	})

	t.Run("16 callers spread over the first attempt", func(t *testing.T) {
		awake(t)
		l.asleep(t, true)
		before := map[string]int{}
		for _, road := range []string{"thunderbolt", "lan", "tailnet"} {
			before[road] = metric(t, laptop, "delta_road_connects_"+road+"_total")
		}
		waits, ends, _ := wave(t, laptop, "/asleep-spread", 16, 200*time.Millisecond)
		first := ends[0]
		late := 0
		for _, e := range ends[1:] {
			if e > first+200*time.Millisecond {
				late++
			}
		}
		t.Logf("LAB 16 callers spread over 3 s of the first attempt (%v): waits %s; ended after the first attempt by more than 200 ms: %d", first.Round(time.Millisecond), spread(waits), late)
		for road, n := range before {
			if d := metric(t, laptop, "delta_road_connects_"+road+"_total") - n; d > 1 {
				t.Errorf("callers during the first attempt connected again on %s: %d connects", road, d)
			}
		}
		l.asleep(t, false)
	})

	t.Run("asleep and offline on the tailnet: answered at once, and woken", func(t *testing.T) {
		awake(t)
		wl := l.listenWake(t)
		l.asleep(t, true)
		seen := time.Now().Add(-time.Minute)
		l.setOnline("studio", false, seen)
		t.Cleanup(func() { l.setOnline("studio", true, time.Time{}) })
		laptop.waitRoad(t, "studio", "tailnet", "offline")
		// The first wave pays the cable's connects (the tailnet is not
		// dialled); the second finds every road held down or offline.
		waits1, _, _ := wave(t, laptop, "/asleep-first", 16, 0)
		waits2, _, bodies := wave(t, laptop, "/asleep-offline", 16, 0)
		t.Logf("LAB 16 callers, studio silent and offline on the tailnet: first wave %s; second wave (every road held down or offline) %s", spread(waits1), spread(waits2))
		for i, b := range bodies {
			if !strings.Contains(b, "studio is asleep; Delta sent it a wake-up") || !strings.Contains(b, "nothing was sent to studio") {
				t.Fatalf("caller %d of the second wave: %s", i, b)
			}
		}
		if metric(t, laptop, "delta_route_hold_down_refusals_total") == 0 {
			t.Errorf("metrics count no hold-down refusals")
		}
		for _, ifc := range []string{"lan0", "thunderbolt0"} {
			mine, err := interfaceByNameIn(l.ns("b"), ifc)
			if err != nil {
				t.Fatal(err)
			}
			want := append(bytes.Repeat([]byte{0xff}, 6), bytes.Repeat(mine.HardwareAddr, 16)...)
			gatewaytest.WaitFor(t, 5*time.Second, "a wake-up on studio's "+ifc, func() bool { return bytes.Equal(wl.on(ifc), want) })
		}
		// Awake again: the roads come back when studio answers its probes,
		// and the next read takes them.
		l.asleep(t, false)
		t0 := time.Now()
		var probed time.Time
		gatewaytest.WaitFor(t, 60*time.Second, "a probe of studio to be answered", func() bool {
			for _, ps := range laptop.status(t).Peers {
				for _, r := range ps.Roads {
					if ps.Name == "studio" && r.State == "up" && r.CheckedAt.After(t0) {
						probed = r.CheckedAt
						return true
					}
				}
			}
			return false
		})
		var answered time.Time
		gatewaytest.WaitFor(t, 30*time.Second, "a read to reach studio again", func() bool {
			r, err := laptop.c.Do("GET", "/v1/peers/studio/notes/awake", nil, "Cache-Control", "no-store")
			answered = time.Now()
			return err == nil && r.Status == 200
		})
		t.Logf("LAB studio awake again: its first probe answered %v after it woke; a read answered %v after that probe",
			probed.Sub(t0).Round(time.Millisecond), answered.Sub(probed).Round(time.Millisecond))
	})
}

func runOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
