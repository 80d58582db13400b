package owner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// errAppHead is the cause a read's context ends with when its app sent no
// head within its timeout.
var errAppHead = errors.New("no answer's head from the app in time")

// ownerRead forwards a read to the local app on pooled connections. The
// answer's head is passed on as it comes, and its body streams (each
// piece flushed as it comes: an event stream or a long poll reaches the
// caller as written), interim 103 answers are passed on, and a body that
// breaks off is cut, never ended as if whole (the handler is aborted).
// The app's timeout (t.timeout: the one the request says, else the app's
// own, else the caller's default; 0 none) bounds the wait for its head;
// nothing of Delta's bounds its body: a quiet answer lives as long as the
// app and the caller keep it (DESIGN §2c).
//
// It is a reverse proxy of its own rather than httputil.ReverseProxy:
// that one, told to flush every write, flushes the head alone from a
// timer's goroutine before the body (two writes and a goroutine a read);
// here the head goes with the body's first piece.
func (o *Owner) ownerRead(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	var head *time.Timer
	if t.timeout > 0 {
		head = time.AfterFunc(t.timeout, func() { cancel(errAppHead) })
	}

	out, err := o.appRequest(ctx, r, t, w)
	if err != nil {
		refuse(w, http.StatusBadRequest, proto.PeerBadRequest, fmt.Sprintf("the path %q does not make a request to app %s (%v)", t.pathQuery, t.app.Name, err))
		return
	}
	var resp *http.Response
	if t.app.H2C {
		resp, err = o.h2Transport().RoundTrip(out)
	} else {
		resp, err = o.appTransport().RoundTrip(out)
	}
	if head != nil {
		head.Stop()
	}
	if err != nil {
		var de dialError
		switch {
		case errors.As(err, &de):
			refuse(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, de.error))
		case errors.Is(context.Cause(ctx), errAppHead) || h1.IsTimeout(err):
			peerError(w, http.StatusGatewayTimeout, proto.PeerTimeout, fmt.Sprintf("app %s on %s did not answer within %s", t.app.Name, o.cfg.Self().Name, t.timeout))
		default:
			// The app's fault, not the road's: the caller's Delta keeps
			// the road (DESIGN §2b).
			peerError(w, http.StatusBadGateway, proto.PeerAppBroke, fmt.Sprintf("app %s on %s broke its answer before its head (%v)", t.app.Name, o.cfg.Self().Name, err))
		}
		return
	}
	body := resp.Body
	defer body.Close()

	// Only this Delta speaks for itself: the app's X-Delta-* go nowhere.
	// The app broke off, fell silent, or the caller went away: the
	// caller's connection is cut, so that it cannot take what came for
	// the whole answer.
	relay.Relay(w, relay.Answer{Status: resp.StatusCode, Header: resp.Header, Length: resp.ContentLength, Trailer: &resp.Trailer, Method: r.Method,
		Set: []string{localapi.HeaderOutcome, string(proto.PeerAnswered)}, Body: body})
}

// appRequest is r as it goes to the app behind t: to the app's URL, with
// neither hop-by-hop headers nor Delta's own, nor the caller's Forwarded
// fields, and with the headers every forwarded request carries; an
// interim 103 from the app is passed on to w.
func (o *Owner) appRequest(ctx context.Context, r *http.Request, t ownerTarget, w http.ResponseWriter) (*http.Request, error) {
	passed := 0
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		Got1xxResponse: func(code int, header textproto.MIMEHeader) error {
			// Only Early Hints are the caller's app's business (DESIGN
			// §2a), and a few of them: an app's flood of interim answers
			// stays here, bounded by h1, never relayed to be taken for a
			// road's fault at the caller.
			if passed < maxEarlyHints && relay.Interim(w, code, header) {
				passed++
			}
			return nil
		},
	})
	var body = r.Body
	if r.ContentLength == 0 {
		body = nil // as a reverse proxy does: a read without a body sends none
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, t.app.URL+t.pathQuery, body)
	if err != nil {
		return nil, err
	}
	out.ContentLength = r.ContentLength
	out.Header = r.Header.Clone()
	te := proto.HasToken(r.Header.Values("Te"), "trailers")
	proto.StripHop(out.Header)
	proto.StripClientOrigin(out.Header) // only this Delta's go to the app (appHeaders)
	if te {
		out.Header.Set("Te", "trailers")
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // not Go's own: the app sees what the caller's app sent
	}
	o.appHeaders(out, t, t.timeout)
	return out, nil
}

// maxEarlyHints bounds the 103 Early Hints an owner passes on for one
// read.
const maxEarlyHints = 16

// dialError marks a failure to connect to the app: nothing reached it.
type dialError struct{ error }

func (e dialError) Unwrap() error { return e.error }

// h2Transport is the pool of connections to the local owner apps that
// speak HTTP/2 with prior knowledge (--h2c), for reads: net/http's, whose
// HTTP/2 streams share a connection per app.
func (o *Owner) h2Transport() *http.Transport {
	o.h2Once.Do(func() {
		o.h2 = &http.Transport{Protocols: new(http.Protocols), DisableCompression: true,
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				c, err := dialApp(ctx, addr)
				if err != nil {
					return nil, dialError{err}
				}
				return c, nil
			}}
		o.h2.Protocols.SetUnencryptedHTTP2(true)
	})
	return o.h2
}

// appTransport is the pool of connections to the local owner apps.
func (o *Owner) appTransport() *h1.Transport {
	o.transportOnce.Do(func() {
		o.transport = &h1.Transport{
			Dial: func(ctx context.Context, addr string) (net.Conn, error) {
				c, err := dialApp(ctx, addr)
				if err != nil {
					return nil, dialError{err}
				}
				return c, nil
			},
			MaxIdlePerHost: 64,
			QuickAck:       true, // an app may answer in two sends, Nagle on
		}
	})
	return o.transport
}
