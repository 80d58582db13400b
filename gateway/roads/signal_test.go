package roads

import (
	"fmt"
	"testing"
	"time"
)

// A report wakes whoever follows the router, and each road keeps its last
// RecentRTTs round-trip times, oldest first, for the status page's chart.
func TestStaticSignalsAndKeepsRecentRTTs(t *testing.T) {
	s, err := NewStatic([]StaticPeer{{Name: "studio", Roads: map[Road]string{LAN: "127.0.0.1:2"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Choose(t.Context(), "studio", "")
	for i := range RecentRTTs + 5 {
		wake := s.Changed()
		s.Report(c, time.Duration(i+1)*time.Millisecond, nil)
		select {
		case <-wake:
		default:
			t.Fatalf("report %d did not wake the follower", i)
		}
	}
	rtts := s.Peers()[0].Roads[0].RecentRTTs
	if len(rtts) != RecentRTTs || rtts[0] != 6 || rtts[len(rtts)-1] != RecentRTTs+5 {
		t.Fatalf("recent RTTs %v: want the last %d, oldest first", rtts, RecentRTTs)
	}
	wake := s.Changed()
	s.Invalidate("studio", LAN, fmt.Errorf("interface en0 went down"))
	select {
	case <-wake:
	default:
		t.Fatal("invalidating a road did not wake the follower")
	}
	if st := s.Peers()[0].Roads[0]; st.State != "down" || st.LastError != "interface en0 went down" {
		t.Errorf("after invalidation: %+v", st)
	}
}
