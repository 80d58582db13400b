package roads

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestStaticChoose(t *testing.T) {
	s, err := NewStatic([]StaticPeer{{Name: "studio", Roads: map[Road]string{Tailnet: "127.0.0.1:3", LAN: "127.0.0.1:2", Thunderbolt: "127.0.0.1:1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		pin     Road
		exclude []Road
		want    Road
		err     error
	}{
		{want: Thunderbolt},
		{exclude: []Road{Thunderbolt}, want: LAN},
		{exclude: []Road{Thunderbolt, LAN}, want: Tailnet},
		{exclude: []Road{Thunderbolt, LAN, Tailnet}, err: ErrNoRoad},
		{pin: LAN, want: LAN},
		{pin: LAN, exclude: []Road{LAN}, err: ErrNoRoad},
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
	if _, err := s.Choose(ctx, "nobody", ""); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("unknown peer: %v", err)
	}
	s.Invalidate("studio", Thunderbolt, errors.New("cable pulled"))
	ps := s.Peers()
	if len(ps) != 1 || ps[0].Road != LAN || ps[0].Roads[0].State != "down" || ps[0].Roads[0].LastError != "cable pulled" {
		t.Errorf("status after invalidating thunderbolt: %+v", ps)
	}
}

func TestStaticConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		peers []StaticPeer
		want  string
	}{
		{[]StaticPeer{{Name: "a", Roads: map[Road]string{"wifi": "1.2.3.4:5"}}}, `road "wifi"`},
		{[]StaticPeer{{Name: "a", Roads: map[Road]string{LAN: "nohost"}}}, "not host:port"},
		{[]StaticPeer{{Name: "a"}}, "no roads"},
		{[]StaticPeer{{Name: "a", Roads: map[Road]string{LAN: "h:1"}}, {Name: "a", Roads: map[Road]string{LAN: "h:1"}}}, "named twice"},
	} {
		if _, err := NewStatic(tc.peers, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.peers, err, tc.want)
		}
	}
	if _, err := Parse("wifi"); err == nil {
		t.Errorf("Parse accepted wifi")
	}
}
