//go:build !linux

package h1

import "net"

// quickAck is Linux's TCP_QUICKACK (quickack_linux.go). macOS has no
// per-socket switch that acknowledges the next segment at once:
// TCP_SENDMOREACKS (Network.framework's disableAckStretching) only turns
// off stretched acknowledgements of streams, and the delay is the
// system's (net.inet.tcp.delayed_ack). XNU's tcp_cc_delay_ack
// (bsd/netinet/tcp_cc.c) acknowledged a pushed segment at once in its
// older modes and in mode 3 (the default) delays one only while the
// receive buffer holds unread data and the window is not growing, so an
// app's head in its own send is usually acknowledged before the body is
// held for it. BenchmarkTwoSends, run by the macOS release workflow,
// gives the figure for a real Mac.
func quickAck(net.Conn) {}
