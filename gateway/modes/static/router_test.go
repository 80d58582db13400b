package static

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

func TestStaticChoose(t *testing.T) {
	s, err := NewRouter([]roads.StaticPeer{{Name: "studio", Roads: map[roads.Road]string{roads.Tailnet: "127.0.0.1:3", roads.LAN: "127.0.0.1:2", roads.Thunderbolt: "127.0.0.1:1"}}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		pin     roads.Road
		exclude []roads.Road
		want    roads.Road
		err     error
	}{
		{want: roads.Thunderbolt},
		{exclude: []roads.Road{roads.Thunderbolt}, want: roads.LAN},
		{exclude: []roads.Road{roads.Thunderbolt, roads.LAN}, want: roads.Tailnet},
		{exclude: []roads.Road{roads.Thunderbolt, roads.LAN, roads.Tailnet}, err: roads.ErrNoRoad},
		{pin: roads.LAN, want: roads.LAN},
		{pin: roads.LAN, exclude: []roads.Road{roads.LAN}, err: roads.ErrNoRoad},
	} {
		c, err := s.Choose(ctx, "studio", tc.pin, tc.exclude...)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("pin %q exclude %v: %v, want %v", tc.pin, tc.exclude, err, tc.err)
			}
			continue
		}
		if err != nil || c.Road != tc.want {
			t.Errorf("pin %q exclude %v: %v %v, want %s", tc.pin, tc.exclude, c, err, tc.want)
		}
	}
	if _, err := s.Choose(ctx, "nobody", ""); !errors.Is(err, roads.ErrUnknownPeer) {
		t.Errorf("unknown peer: %v", err)
	}
	s.Invalidate("studio", roads.Thunderbolt, &roads.DropError{Evidence: roads.EvidenceNetwatch, Err: errors.New("cable pulled")})
	ps := s.Peers()
	if len(ps) != 1 || ps[0].Road != string(roads.LAN) || ps[0].Roads[0].State != localapi.RoadDown || ps[0].Roads[0].LastError != "its interface went: cable pulled" ||
		ps[0].Roads[0].DropEvidence != "netwatch" {
		t.Errorf("status after invalidating thunderbolt: %+v", ps)
	}
}

func TestStaticConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		peers []roads.StaticPeer
		want  string
	}{
		{[]roads.StaticPeer{{Name: "a", Roads: map[roads.Road]string{"wifi": "1.2.3.4:5"}}}, `road "wifi"`},
		{[]roads.StaticPeer{{Name: "a", Roads: map[roads.Road]string{roads.LAN: "nohost"}}}, "not host:port"},
		{[]roads.StaticPeer{{Name: "a"}}, "no roads"},
		{[]roads.StaticPeer{{Name: "a", Roads: map[roads.Road]string{roads.LAN: "h:1"}}, {Name: "a", Roads: map[roads.Road]string{roads.LAN: "h:1"}}}, "named twice"},
	} {
		if _, err := NewRouter(tc.peers, nil, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.peers, err, tc.want)
		}
	}
	if _, err := roads.Parse("wifi"); err == nil {
		t.Errorf("Parse accepted wifi")
	}
}

// A report wakes whoever follows the router, and each road keeps its last
// roads.RecentRTTs round-trip times, oldest first, for the status page's chart.
func TestStaticSignalsAndKeepsRecentRTTs(t *testing.T) {
	s, err := NewRouter([]roads.StaticPeer{{Name: "studio", Roads: map[roads.Road]string{roads.LAN: "127.0.0.1:2"}}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Choose(t.Context(), "studio", "")
	for i := range roads.RecentRTTs + 5 {
		wake := s.Changed()
		s.Report(c, time.Duration(i+1)*time.Millisecond, nil)
		select {
		case <-wake:
		default:
			t.Fatalf("report %d did not wake the follower", i)
		}
	}
	rtts := s.Peers()[0].Roads[0].RecentRTTs
	if len(rtts) != roads.RecentRTTs || rtts[0] != 6 || rtts[len(rtts)-1] != roads.RecentRTTs+5 {
		t.Fatalf("recent RTTs %v: want the last %d, oldest first", rtts, roads.RecentRTTs)
	}
	wake := s.Changed()
	s.Invalidate("studio", roads.LAN, &roads.InterfaceLostError{Interface: "en0"})
	select {
	case <-wake:
	default:
		t.Fatal("invalidating a road did not wake the follower")
	}
	if st := s.Peers()[0].Roads[0]; st.State != localapi.RoadDown || st.LastError != "its interface went: interface en0 went down or lost its address" {
		t.Errorf("after invalidation: %+v", st)
	}
}

// TestPlaintextOnLoopback: a config of the network-key kind (plain TCP)
// runs only when its listener and every road are on loopback; off it, the
// refusal names the first address off loopback and how to pair by ID.
func TestPlaintextOnLoopback(t *testing.T) {
	lo := []roads.StaticPeer{{Name: "studio", Roads: map[roads.Road]string{roads.LAN: "127.0.0.1:7421", roads.Thunderbolt: "[::1]:7421"}}}
	for _, tc := range []struct {
		peers  []roads.StaticPeer
		listen string
		says   string // "" for none
	}{
		{lo, "127.0.0.1:7421", ""},
		{lo, "localhost:7421", ""},
		{lo, "0.0.0.0:7421", "its peer API listens on 0.0.0.0:7421"},
		{[]roads.StaticPeer{{Name: "studio", Roads: map[roads.Road]string{roads.LAN: "192.168.1.20:7421"}}}, "127.0.0.1:7421", "peer studio's lan road is 192.168.1.20:7421"},
	} {
		err := PlaintextOnLoopback(tc.peers, tc.listen)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%v on %s: %v", tc.peers, tc.listen, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "delta pair studio=ID")):
			t.Errorf("%v on %s: %v, want it to say %q and how to pair", tc.peers, tc.listen, err, tc.says)
		}
	}
}
