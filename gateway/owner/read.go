package owner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/delta-roads/delta/gateway/oneshot"
	"github.com/delta-roads/delta/gateway/proto"
)

// readState is a read on its way through the proxy: its target, and the
// timers that bound the wait for the app's head and each silence of its
// body (X-Delta-Timeout, DESIGN §2a), never the whole transfer.
type readState struct {
	t      ownerTarget
	head   *time.Timer
	cancel context.CancelCauseFunc
}

type readKey struct{}

// Causes a read's context ends with.
var (
	errAppHead   = errors.New("no answer's head from the app in time")
	errAppSilent = errors.New("the app's answer was silent for too long")
)

// ownerRead forwards a read to the local app through a reverse proxy with
// pooled connections. The answer streams (flushed as it comes: an event
// stream or a long poll reaches the caller as written), interim 103
// answers are passed on, and a body that breaks off is cut, never ended
// as if whole (the proxy aborts the handler).
func (o *Owner) ownerRead(w http.ResponseWriter, r *http.Request, t ownerTarget) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	st := &readState{t: t, cancel: cancel}
	st.head = time.AfterFunc(t.timeout, func() { cancel(errAppHead) })
	defer st.head.Stop()
	o.appProxy().ServeHTTP(w, r.WithContext(context.WithValue(ctx, readKey{}, st)))
}

// dialError marks a failure to connect to the app: nothing reached it.
type dialError struct{ error }

func (e dialError) Unwrap() error { return e.error }

func (o *Owner) appProxy() *httputil.ReverseProxy {
	o.proxyOnce.Do(func() {
		o.proxy = &httputil.ReverseProxy{
			Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := appDialer.DialContext(ctx, network, addr)
					if err != nil {
						return nil, dialError{err}
					}
					return c, nil
				},
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true,
			},
			Rewrite: func(pr *httputil.ProxyRequest) {
				st := pr.In.Context().Value(readKey{}).(*readState)
				u, _ := url.Parse(st.t.app.URL + st.t.pathQuery)
				pr.Out.URL, pr.Out.Host = u, u.Host
				proto.StripHop(pr.Out.Header)
				o.appHeaders(pr.Out.Header, st.t, st.t.timeout)
			},
			ModifyResponse: func(resp *http.Response) error {
				st := resp.Request.Context().Value(readKey{}).(*readState)
				st.head.Stop()
				resp.Body = proto.Silenced(resp.Body, st.t.timeout, func() { st.cancel(fmt.Errorf("%w (%s)", errAppSilent, st.t.timeout)) })
				proto.StripDelta(resp.Header)
				resp.Header.Set(proto.HeaderOutcome, string(proto.PeerAnswered))
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				st := r.Context().Value(readKey{}).(*readState)
				t := st.t
				var de dialError
				switch {
				case errors.As(err, &de):
					refuse(w, http.StatusServiceUnavailable, proto.PeerAppDown, fmt.Sprintf("app %s on %s is not listening (%v)", t.app.Name, o.cfg.Self().Name, de.error))
				case errors.Is(context.Cause(r.Context()), errAppHead) || oneshot.IsTimeout(err):
					peerError(w, http.StatusGatewayTimeout, proto.PeerTimeout, fmt.Sprintf("app %s on %s did not answer within %s", t.app.Name, o.cfg.Self().Name, t.timeout))
				default:
					peerError(w, http.StatusBadGateway, proto.PeerAppDown, fmt.Sprintf("app %s on %s broke off its answer (%v)", t.app.Name, o.cfg.Self().Name, err))
				}
			},
			// Every answer is passed on as it arrives (DESIGN §2a), not
			// only event streams and answers of unknown length.
			FlushInterval: -1,
			BufferPool:    proto.CopyBuffers,
		}
	})
	return o.proxy
}
