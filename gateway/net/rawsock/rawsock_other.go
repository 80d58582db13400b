//go:build !linux

package rawsock

import (
	"net"
	"syscall"
)

const enabled = false

// Wrap returns c: raw system calls are used on Linux only.
func Wrap(c net.Conn) net.Conn { return c }

// Peek looks at fd's receive queue without taking from it or waiting
// (recv with MSG_PEEK and MSG_DONTWAIT): n > 0 when bytes wait, n == 0
// when the other end closed, EAGAIN when nothing is there.
func Peek(fd uintptr) (n int, err error) {
	var b [1]byte
	n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
