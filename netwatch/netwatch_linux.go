package netwatch

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Netlink multicast groups (linux/rtnetlink.h); syscall does not export them.
const (
	rtmgrpLink       = 0x1
	rtmgrpIPv4IfAddr = 0x10
	rtmgrpIPv6IfAddr = 0x100
)

// nlMon receives link and address events from netlink (NETLINK_ROUTE).
type nlMon struct {
	f   *os.File
	buf []byte
}

func newOSMon() (osMon, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	sa := &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: rtmgrpLink | rtmgrpIPv4IfAddr | rtmgrpIPv6IfAddr}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A non-blocking fd in an os.File uses the runtime's poller, so Close
	// wakes a blocked Receive.
	return &nlMon{f: os.NewFile(uintptr(fd), "netlink"), buf: make([]byte, 64<<10)}, nil
}

func (m *nlMon) Receive() error {
	_, err := m.f.Read(m.buf)
	if errors.Is(err, os.ErrClosed) {
		return errClosed
	}
	if errors.Is(err, syscall.ENOBUFS) {
		// The kernel dropped events: the caller re-reads the whole state.
		return nil
	}
	return err
}

func (m *nlMon) Close() error { return m.f.Close() }
