package tailnet

import (
	"context"
	"crypto/tls"
	"net"

	"tailscale.com/client/local"
)

// LocalClient is tsnet's local API client (for tests).
func (n *Node) LocalClient() *local.Client { return n.lc }

// Dial connects to addr over the tailnet (for tests).
func (n *Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.srv.Dial(ctx, network, addr)
}

// Certificate is this computer's TLS certificate (for tests).
func (n *Node) Certificate() tls.Certificate { return n.cert }
