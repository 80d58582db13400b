package static_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/kit"
)

// capture reads every packet on the loopback interface (an AF_PACKET
// socket, root only) until stop is called, which returns the TCP payloads
// it saw to or from port.
func capture(t *testing.T) (stop func(port int) []byte) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("capturing packets needs root (an AF_PACKET socket); make test runs as root in CI")
	}
	const ethPAll = 0x0003
	proto := int(ethPAll>>8 | ethPAll<<8&0xff00) // htons
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, proto)
	if err != nil {
		t.Fatalf("a packet socket: %v", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: lo.Index}); err != nil {
		t.Fatalf("bind the packet socket to lo: %v", err)
	}
	// A receive buffer room for everything a test sends, so that a busy
	// machine that reads late loses nothing.
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<20)
	tv := syscall.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	var mu sync.Mutex
	var frames [][]byte
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil { // the 50 ms timeout: nothing is queued now
				select {
				case <-done:
					return // stopped, and every queued packet read
				default:
					continue
				}
			}
			mu.Lock()
			frames = append(frames, bytes.Clone(buf[:n]))
			mu.Unlock()
		}
	}()
	var once sync.Once
	// stop reads what is still queued, then stops.
	stop = func(port int) []byte {
		once.Do(func() { close(done); wg.Wait(); syscall.Close(fd) })
		mu.Lock()
		defer mu.Unlock()
		var out bytes.Buffer
		for _, f := range frames {
			if src, dst, payload, ok := tcpPayload(f); ok && (src == port || dst == port) {
				out.Write(payload)
			}
		}
		return out.Bytes()
	}
	t.Cleanup(func() { stop(0) })
	return stop
}

// tcpPayload takes an IPv4 TCP segment out of a loopback frame (an
// Ethernet header of zeros): its ports and its payload.
func tcpPayload(f []byte) (src, dst int, payload []byte, ok bool) {
	if len(f) < 14+20 || f[12] != 0x08 || f[13] != 0x00 {
		return 0, 0, nil, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ip[9] != syscall.IPPROTO_TCP || len(ip) < ihl+20 {
		return 0, 0, nil, false
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if total > len(ip) {
		total = len(ip)
	}
	tcp := ip[ihl:total]
	off := int(tcp[12]>>4) * 4
	if len(tcp) < off {
		return 0, 0, nil, false
	}
	return int(binary.BigEndian.Uint16(tcp[0:2])), int(binary.BigEndian.Uint16(tcp[2:4])), tcp[off:], true
}

// TestNothingInTheClear captures every packet of the road between two
// Deltas paired by ID (on loopback: the packets to and from studio's peer
// port; the local API and the owner app are loopback by design) while a
// call and a read cross it, and finds neither body nor answer nor the
// app's path in them. The same capture of a pair
// of the older kind (plain TCP, allowed on loopback) finds them all: the
// capture sees what it should.
func TestNothingInTheClear(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		stop := capture(t)
		var laptop, studio *gatewaytest.Delta
		if sealed {
			laptop, studio = gatewaytest.SealedPair(t, "laptop", "studio")
		} else {
			laptop, studio = gatewaytest.StaticPair(t, "laptop", "studio")
		}
		app := gatewaytest.StartOwnerApp(t)
		studio.Register(t, "owner", app.URL)
		c, err := kit.Open(laptop.Dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		body := []byte("the-secret-note-" + kit.NewRequestID())
		ans, err := c.Call(ctx, "studio", "owner", "POST", "/answer/private-path", body, nil)
		if err != nil || !bytes.Equal(ans.Body, body) {
			t.Fatalf("the call: %v %+v", err, ans)
		}
		read, err := c.Get(ctx, "studio", "owner", "/read-path-visible-only-in-the-clear", nil)
		if err != nil || read.Status != 200 {
			t.Fatalf("the read: %v", err)
		}
		c.Close()
		_, port, _ := net.SplitHostPort(studio.PeerAddr)
		p, _ := strconv.Atoi(port)
		seen := stop(p)
		for _, secret := range [][]byte{body, []byte("/answer/private-path"), []byte("read-path-visible-only-in-the-clear")} {
			found := bytes.Contains(seen, secret)
			switch {
			case sealed && found:
				t.Fatalf("sealed roads: %q crossed the road in the clear (%d bytes captured)", secret, len(seen))
			case !sealed && !found:
				t.Fatalf("the plain-TCP control: %q is not in the %d bytes captured, so the capture cannot be trusted", secret, len(seen))
			}
		}
		t.Logf("sealed %t: %d bytes of the road's TCP payloads captured on lo (port %d)", sealed, len(seen), p)
	}
}
