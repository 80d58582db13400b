//go:build !linux

package h1

import "net"

// quickAck is Linux's TCP_QUICKACK (quickack_linux.go). macOS has no
// per-socket switch: its delayed acknowledgement is the system's
// (net.inet.tcp.delayed_ack), which acknowledges a pushed small segment
// sooner than Linux does.
func quickAck(net.Conn) {}
