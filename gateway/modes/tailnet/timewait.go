package tailnet

import (
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"tailscale.com/tsnet"
)

// tailnetTimeWait is how long a tailnet connection this Delta closed first
// stays in TIME-WAIT in tsnet's netstack: not at all.
//
// Why: a call asks Connection: close, so the owner's side closes first and
// its netstack (gVisor) would keep the connection in TIME-WAIT for 60 s.
// gVisor hands a new SYN that arrives at a TIME-WAIT endpoint only to a
// listening gVisor endpoint (tcp.Endpoint.handleTimeWaitSegments), and tsnet
// has none: it takes connections through a forwarder. So when the caller's
// netstack picks the same source port again (it picks at random), the SYN
// is dropped and the connect hangs until its timeout — the "tailnet stall"
// of docs/benchmarks.md, one connect in a few hundred back-to-back calls.
// With no TIME-WAIT the endpoint is gone when the SYN comes, and the
// forwarder takes it as the new connection it is. What TIME-WAIT guards
// against, an old duplicate segment landing in a new connection on the same
// ports, is covered by gVisor's clock-based initial sequence numbers and
// WireGuard's replay window; a lost last ACK makes the peer's retransmitted
// FIN draw a reset after the answer was read, which loses nothing.
const tailnetTimeWait = 0 * time.Second

// transportOptions is the part of tsnet's netstack (a *netstack.Impl) that
// sets a TCP option on its gVisor stack.
type transportOptions interface {
	SetTransportProtocolOption(tcpip.TransportProtocolNumber, tcpip.SettableTransportProtocolOption) tcpip.Error
}

// setTimeWait sets tailnetTimeWait on srv's netstack; srv has started.
func setTimeWait(srv *tsnet.Server) error {
	ns, ok := srv.Sys().Netstack.GetOK()
	if !ok {
		return fmt.Errorf("tsnet has no netstack to set TIME-WAIT on")
	}
	so, ok := ns.(transportOptions)
	if !ok {
		return fmt.Errorf("tsnet's netstack (%T) cannot set TCP options", ns)
	}
	opt := tcpip.TCPTimeWaitTimeoutOption(tailnetTimeWait)
	if err := so.SetTransportProtocolOption(tcp.ProtocolNumber, &opt); err != nil {
		return fmt.Errorf("set TIME-WAIT on tsnet's netstack: %v", err)
	}
	return nil
}
