package tailnet

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/routes"
)

func TestMagicPacket(t *testing.T) {
	mac, _ := net.ParseMAC("a4:83:e7:01:02:03")
	p, err := MagicPacket(mac)
	if err != nil || len(p) != 102 || !bytes.Equal(p[:6], bytes.Repeat([]byte{0xff}, 6)) {
		t.Fatalf("%x %v", p, err)
	}
	for i := range 16 {
		if !bytes.Equal(p[6+6*i:12+6*i], mac) {
			t.Fatalf("repeat %d: %x", i, p[6+6*i:12+6*i])
		}
	}
	if _, err := MagicPacket(net.HardwareAddr{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte address made a packet")
	}
}

// TestAsleepError: it says the words of the issue, and is still a
// refusal of every road (held down, offline) for the callers.
func TestAsleepError(t *testing.T) {
	cause := &routes.OfflineError{Peer: "studio"}
	err := error(&AsleepError{Peer: "studio", Cause: cause, Sent: []string{"a4:83:e7:01:02:03 via en0"}})
	if !strings.HasPrefix(err.Error(), "studio is asleep; Delta sent it a wake-up (a4:83:e7:01:02:03 via en0)") || !errors.Is(err, roads.ErrOffline) {
		t.Fatalf("%v", err)
	}
}
