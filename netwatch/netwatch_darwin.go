package netwatch

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/net/route"
)

// rtMon receives interface and address messages from the routing socket.
type rtMon struct {
	f   *os.File
	buf []byte
}

func newOSMon() (osMon, error) {
	fd, err := syscall.Socket(syscall.AF_ROUTE, syscall.SOCK_RAW, syscall.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("routing socket: %w", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &rtMon{f: os.NewFile(uintptr(fd), "route"), buf: make([]byte, 64<<10)}, nil
}

// Receive returns after a message about an interface or an address; other
// routing messages (routes come and go all the time) are skipped.
func (m *rtMon) Receive() error {
	for {
		n, err := m.f.Read(m.buf)
		if errors.Is(err, os.ErrClosed) {
			return errClosed
		}
		if err != nil {
			return err
		}
		msgs, err := route.ParseRIB(route.RIBTypeRoute, m.buf[:n])
		if err != nil {
			return nil // unknown message: re-read to be safe
		}
		for _, msg := range msgs {
			switch msg.(type) {
			case *route.InterfaceMessage, *route.InterfaceAddrMessage, *route.InterfaceAnnounceMessage:
				return nil
			}
		}
	}
}

func (m *rtMon) Close() error { return m.f.Close() }
