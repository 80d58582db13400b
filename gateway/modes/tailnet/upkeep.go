package tailnet

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
)

// Upkeep is the traffic a Delta sends its peers only to keep its roads
// known: probes of each road (GET /delta/v1/ping), hellos and tickets. It
// is counted where it leaves, by kind (roads.Upkeep*): requests, and the
// bytes of their connections both ways as the socket carries them (TLS
// records on lan and thunderbolt, so a probe's handshake is in; TCP/IP and
// WireGuard headers are not).
type upkeep struct {
	probe, hello, ticket meter
	// rounds counts the probes of the tailnet road sent (round.go), one
	// a round: a test's count of the rounds themselves.
	rounds atomic.Uint64
}

type meter struct {
	requests, bytes atomic.Uint64
}

func (m *meter) load() localapi.Traffic {
	return localapi.Traffic{Requests: m.requests.Load(), Bytes: m.bytes.Load()}
}

type meterKey struct{}

// metered returns ctx carrying m: a connection dialled with it counts its
// bytes to m (meterConn).
func metered(ctx context.Context, m *meter) context.Context {
	m.requests.Add(1)
	return context.WithValue(ctx, meterKey{}, m)
}

// meterConn counts c's bytes to the meter ctx carries, if any.
func meterConn(ctx context.Context, c net.Conn) net.Conn {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil || c == nil {
		return c
	}
	return &meteredConn{Conn: c, m: m}
}

type meteredConn struct {
	net.Conn
	m *meter
}

func (c *meteredConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.m.bytes.Add(uint64(n))
	return n, err
}

func (c *meteredConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.m.bytes.Add(uint64(n))
	return n, err
}

func (u *upkeep) counters() map[string]localapi.Traffic {
	return map[string]localapi.Traffic{
		roads.UpkeepProbe:  u.probe.load(),
		roads.UpkeepHello:  u.hello.load(),
		roads.UpkeepTicket: u.ticket.load(),
	}
}
