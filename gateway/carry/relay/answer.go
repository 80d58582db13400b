package relay

import (
	"io"
	"net/http"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Answer is one answer to relay: its head as it was read, the body's
// source, and this hop's options. Relay writes it in the only right order.
type Answer struct {
	// Status, Header and Length are the head as read (Length -1 when
	// unknown). Trailer points at the answer's trailer field
	// (&http.Response.Trailer): read at the head, it names the trailers
	// announced; read once the body has ended, it holds those that came,
	// announced or not (a client may set a new map then).
	Status  int
	Header  http.Header
	Length  int64
	Trailer *http.Header
	// Method is the request's ("" for a call's: never a HEAD). A HEAD's
	// answer has no body to pass, nor trailers.
	Method string
	// Set is this hop's own fields (name, value pairs; an empty value is
	// not set): its X-Delta-Outcome, request id, road.
	Set []string
	// Ready: the body's first bytes came with the head (read ahead, or
	// buffered by the client), so the head goes out with them rather than
	// alone. A body whose reader says it has bytes buffered is ready too.
	Ready bool
	// Body is the body's source, passed as it arrives (Flow), with each
	// piece written to Also as well when it is not nil (a copy kept, a
	// count).
	Body io.Reader
	Also io.Writer
	// Pass, when set, passes the body itself in place of Body and Also
	// (a relay that resumes a read on a fresh road, or records what
	// passes): it returns the trailers that came after the body (nil:
	// *Trailer's) and why the body did not reach w whole (nil: it did).
	Pass func(w http.ResponseWriter) (trailer http.Header, err error)
	// OnCut is told why the body did not reach w whole, just before the
	// answer is cut (a count, a log line, a journal's note). It may not
	// write to w.
	OnCut func(err error)
}

// Relay relays a to w: its head (Head: the fields that may pass, its
// length or its announced trailers, this hop's own fields), passed on at
// once unless its first bytes are already here or nothing follows (DESIGN
// §2c); its body as it arrives; then, if the body came whole, its
// trailers. A body that broke off, or that w would not take, is never
// ended as if whole: OnCut is told, and the answer is cut (Abort), so
// Relay returns only for an answer passed whole.
func Relay(w http.ResponseWriter, a Answer) {
	var announced http.Header
	if a.Trailer != nil {
		announced = *a.Trailer
	}
	head(w, a.Status, a.Header, a.Length, announced, a.Method, a.Set...)
	if a.Method == http.MethodHead {
		return
	}
	if a.Length != 0 {
		passHead(w, a.Ready || ready(a.Body))
	}
	var trailer http.Header
	var err error
	if a.Pass != nil {
		trailer, err = a.Pass(w)
	} else if a.Body != nil {
		_, err = Flow(w, a.Body, a.Also)
	}
	if trailer == nil && a.Trailer != nil {
		trailer = *a.Trailer // as the body's end left it
	}
	if err != nil {
		if a.OnCut != nil {
			a.OnCut(err)
		}
		abort()
	}
	trailers(w, trailer)
}

// Interim passes an interim answer on to w when it is one an app's
// client may have (103 Early Hints, DESIGN §2a), stripped of hop-by-hop
// fields, and reports whether it did; other interim answers are not the
// app's business and go nowhere.
func Interim(w http.ResponseWriter, code int, header map[string][]string) bool {
	if code != http.StatusEarlyHints {
		return false
	}
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	proto.StripHop(h)
	w.WriteHeader(code)
	clear(h)
	return true
}
