package loopnet

import (
	"errors"
	"net"
	"testing"
	"time"

	"tailscale.com/net/stun"
)

// TestSTUN asks the tailnet's STUN server, at the port its DERP map gives,
// for this socket's address, as a node's netcheck does, and gets it back;
// after Close the server's socket is gone.
func TestSTUN(t *testing.T) {
	n, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close()
		}
	}()
	node := n.Server.DERPMap.Regions[1].Nodes[0]
	if node.STUNPort <= 0 {
		t.Fatalf("the DERP map's STUN port is %d: no STUN server in the tailnet", node.STUNPort)
	}
	srv := &net.UDPAddr{IP: net.ParseIP(node.IPv4), Port: node.STUNPort}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Something that is not STUN gets no answer, and does not stop it.
	if _, err := c.WriteToUDP([]byte("not stun"), srv); err != nil {
		t.Fatal(err)
	}
	tx := stun.NewTxID()
	if _, err := c.WriteToUDP(stun.Request(tx), srv); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1500)
	k, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer from the STUN server at %v: %v", srv, err)
	}
	gotTx, addr, err := stun.ParseResponse(buf[:k])
	if err != nil {
		t.Fatalf("the STUN server's answer: %v", err)
	}
	if gotTx != tx {
		t.Fatalf("answered transaction %x, asked %x", gotTx, tx)
	}
	if want := c.LocalAddr().(*net.UDPAddr).AddrPort(); addr != want {
		t.Fatalf("the STUN server says this socket is %v; it is %v", addr, want)
	}

	n.Close()
	closed = true
	select {
	case <-n.stunEnd:
	default:
		t.Fatal("Close returned with the STUN server still serving")
	}
	if _, _, err := n.stun.ReadFromUDP(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the STUN server's socket after Close: %v, want closed", err)
	}
}
