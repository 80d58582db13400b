package kit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/api/roadfacts"
)

// HeaderDirect is "true" on an answer the kit read from the peer directly
// because this computer's Delta was down.
const HeaderDirect = "X-Delta-Direct"

// readDirect reads path from app on peer without this computer's Delta,
// which is down (down says why): over the peer's thunderbolt road, then
// its lan road, with the read ticket and the pinned TLS Delta keeps in
// <state>/direct.json, bound to the road's interface. A read only: a call
// never goes around Delta. When it cannot (no file, no road, no fresh
// ticket), the answer is down, naming why.
func (c *Client) readDirect(ctx context.Context, down *DeltaDown, peer, app, path string, h http.Header) (*http.Response, error) {
	because := func(why string) error {
		return &DeltaDown{StateDir: down.StateDir, URL: down.URL, Err: fmt.Errorf("%w; and it cannot be read around: %s", down.Err, why)}
	}
	d, err := localapi.ReadDirect(c.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, because("there is no " + localapi.DirectFile + " (Delta writes it while it runs)")
	}
	if err != nil {
		return nil, because(err.Error())
	}
	var dp *localapi.DirectPeer
	for i := range d.Peers {
		if d.Peers[i].Name == peer {
			dp = &d.Peers[i]
		}
	}
	route := h.Get(HeaderRoute)
	switch {
	case route == "tailnet":
		return nil, because("the tailnet road lives inside Delta")
	case dp == nil || len(dp.Roads) == 0:
		return nil, because(fmt.Sprintf("Delta knew no lan or thunderbolt road to %s (the tailnet road lives inside Delta)", peer))
	case dp.Ticket == "":
		return nil, because(fmt.Sprintf("Delta held no read ticket for %s", peer))
	case !c.now().Before(dp.Expires):
		return nil, because(fmt.Sprintf("its read ticket for %s expired at %s (Delta renews it every 5 minutes while it runs)", peer, dp.Expires.Local().Format("15:04:05")))
	}
	var cert *tls.Certificate
	if d.ClientCert != "" {
		cc, err := tls.LoadX509KeyPair(filepath.Join(c.StateDir, d.ClientCert), filepath.Join(c.StateDir, d.ClientKey))
		if err != nil {
			return nil, because("this computer's certificate cannot be read: " + err.Error())
		}
		cert = &cc
	}
	out := h.Clone()
	for k := range out {
		if strings.HasPrefix(strings.ToLower(k), "x-delta-") || strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Cookie") {
			delete(out, k)
		}
	}
	out.Set("Authorization", "Delta "+dp.Ticket)
	if v := h.Get(HeaderTimeout); v != "" {
		out.Set(HeaderTimeout, v)
	}
	if v := h.Get(HeaderApp); v != "" {
		out.Set(HeaderApp, v)
	}
	var tried []string
	for _, rd := range dp.Roads {
		if route != "" && rd.Road != route {
			continue
		}
		if len(tried) == 2 {
			break // one fall-back, as Delta's
		}
		resp, err := c.readRoad(ctx, rd, cert, app, path, out)
		if err == nil {
			resp.Header.Set(HeaderRoute, rd.Road)
			resp.Header.Set(HeaderDirect, "true")
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		tried = append(tried, fmt.Sprintf("%s (%s): %v", rd.Road, rd.Address, err))
	}
	if len(tried) == 0 {
		return nil, because(fmt.Sprintf("Delta knew no %s road to %s", route, peer))
	}
	return nil, because(fmt.Sprintf("%s did not answer on %s", peer, strings.Join(tried, "; ")))
}

// connectTimeout is rd's connect timeout as direct.json gives it (Delta's
// own), else as this kit's roadfacts has it.
func connectTimeout(rd localapi.DirectRoad) time.Duration {
	if rd.ConnectTimeoutMS > 0 {
		return time.Duration(rd.ConnectTimeoutMS) * time.Millisecond
	}
	return roadfacts.Road(rd.Road).ConnectTimeout()
}

// readRoad sends one read on road rd, on a connection of its own.
func (c *Client) readRoad(ctx context.Context, rd localapi.DirectRoad, cert *tls.Certificate, app, path string, h http.Header) (*http.Response, error) {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		road := roadfacts.Road(rd.Road)
		d := net.Dialer{Timeout: connectTimeout(rd), Control: roadfacts.BindControl(rd.Interface, road)}
		return d.DialContext(ctx, "tcp", rd.Address)
	}
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true, DisableCompression: true, ForceAttemptHTTP2: false}
	scheme := "http"
	if rd.Pin != "" {
		if cert == nil {
			return nil, errors.New("the road is pinned TLS and this computer's certificate is not named")
		}
		scheme = "https"
		tr.TLSHandshakeTimeout = connectTimeout(rd)
		tr.TLSClientConfig = &tls.Config{
			MinVersion:         tls.VersionTLS13,
			Certificates:       []tls.Certificate{*cert},
			InsecureSkipVerify: true, // the pin is the check: the certificate is self-signed
			VerifyConnection:   roadfacts.VerifyPin(rd.Address, rd.Pin),
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+rd.Address+"/delta/v1/apps/"+app+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header = h.Clone()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	switch o := resp.Header.Get(HeaderOutcome); o {
	case string(localapi.Unauthorized), string(localapi.Forbidden):
		// The door refused the read ticket: the road's failure, as Delta
		// counts a door's refusal.
		resp.Body.Close()
		return nil, fmt.Errorf("its door refused the read ticket (%s)", resp.Status)
	case "app_not_found": // the peer wire's words (proto.PeerAppNotFound), as the local API says them
		resp.Header.Set(HeaderOutcome, string(localapi.NotFound))
	case "app_unavailable": // proto.PeerAppDown
		resp.Header.Set(HeaderOutcome, string(localapi.Unavailable))
	}
	return resp, nil
}

// now is the client's clock.
func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
