package caller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/gateway/oneshot"
	"github.com/delta-roads/delta/gateway/peerclient"
	"github.com/delta-roads/delta/gateway/pintls"
	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/readcache"
	"github.com/delta-roads/delta/gateway/roads"
)

// readGrace is how long past the connect timeout and X-Delta-Timeout a read
// waits for the owner's reply.
const readGrace = time.Second

// readFailure is why a read got no answer from the owner app.
type readFailure struct {
	o      proto.Outcome
	detail string
	road   string
	// road reports whether the failure was the road's (transport, door),
	// as opposed to the owner app's: only the road's leads to a fallback.
	roadFault bool
}

// Read carries a read to its peer: fresh answers come from the
// cache, a failing thunderbolt/lan road is dropped and one fresh road is
// tried, and when the peer cannot be reached a stored answer is served as
// stale (DESIGN §5).
func (cr *Caller) Read(w http.ResponseWriter, r *http.Request, t Target) {
	key := readcache.Key(t.Peer, t.App, t.PathQuery)
	isGet := r.Method == http.MethodGet
	if isGet && !readcache.RequestBypasses(r.Header) {
		if e := cr.cfg.Cache.Get(key, r.Header); e != nil && e.Fresh(cr.cfg.Now()) {
			cr.cfg.OnRead(proto.Answered)
			cr.cfg.OnCacheHit()
			cr.serveCached(w, r, e, "")
			return
		}
	}
	var fail readFailure
	err := cr.cfg.Peers.Do(r.Context(), peerclient.Read, t.Peer, t.Pin, func(try peerclient.Try) peerclient.Result {
		cand := try.Cand
		ctx, cancel := context.WithTimeout(r.Context(), cand.Road.ConnectTimeout()+t.Timeout+readGrace)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+cand.Address+"/delta/v1/apps/"+t.App+t.PathQuery, nil)
		if err != nil {
			fail = readFailure{o: proto.BadRequest, detail: proto.NotSent(fmt.Sprintf("the path %q does not make a valid request (%v)", t.PathQuery, err), "")}
			return peerclient.Result{Verdict: peerclient.Done}
		}
		req.Header = proto.ForwardHeaders(r.Header)
		if try.Ticket != "" {
			req.Header.Set("Authorization", proto.TicketAuth(try.Ticket))
		}
		req.Header.Set(proto.HeaderTimeout, proto.FormatTimeout(t.Timeout))
		if app := r.Header.Get(proto.HeaderApp); app != "" {
			req.Header.Set(proto.HeaderApp, app)
		}
		started := cr.cfg.Now()
		resp, used, dialErr, err := cr.cfg.Peers.RoundTrip(req, cand)
		res := peerclient.Result{Road: used.Road, NeedsTicket: used.NeedsTicket}
		if err != nil {
			if dialErr == nil {
				cr.cfg.Router.Report(used, 0, err) // the connection broke or timed out after connecting
			}
			fail = readFailure{o: proto.Unavailable, road: string(used.Road), roadFault: true,
				detail: fmt.Sprintf("%s did not answer the read via %s: %v", t.Peer, used, err)}
			var mm *pintls.MismatchError
			switch {
			case errors.As(err, &mm):
				fail.o = proto.Forbidden
				fail.detail = proto.NotSent(fmt.Sprintf("%s's certificate on %s is not the one learned over the tailnet (%v)", t.Peer, cand, mm), t.Peer)
				cr.cfg.Log.Warn("certificate pin mismatch", "peer", t.Peer, "road", cand.Road, "address", cand.Address, "pinned", mm.Want, "presented", mm.Got)
			case oneshot.IsTimeout(err):
				fail.o = proto.Timeout
				fail.detail = fmt.Sprintf("%s did not answer the read via %s within %s: %v", t.Peer, used, used.Road.ConnectTimeout()+t.Timeout, err)
			}
			res.Verdict, res.RoadFault, res.Tried, res.Reason = peerclient.Failed, true, peerclient.TriedRoads(used, cand, dialErr), errors.New(fail.detail)
			return res
		}
		cr.cfg.Router.Report(used, cr.cfg.Now().Sub(started), nil)
		if pe := proto.PeerError(resp.Header.Get(proto.HeaderOutcome)); pe == proto.PeerAnswered {
			cr.relayRead(w, resp, used, key, r.Header, isGet)
			fail = readFailure{}
			res.Verdict = peerclient.Done
			return res
		} else {
			var eb proto.ErrorBody
			// A reply that is not Delta's JSON has no detail to quote.
			_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&eb)
			resp.Body.Close()
			fail = mapOwnerReadReply(t.Peer, used, pe, resp.StatusCode, eb.Detail)
			res.Tried, res.Reason = []roads.Road{used.Road}, errors.New(fail.detail)
			switch {
			case pe == proto.PeerUnauthorized:
				res.Verdict = peerclient.DoorRefused
			case fail.roadFault:
				res.Verdict, res.RoadFault = peerclient.Failed, true
			default:
				res.Verdict = peerclient.Done // the owner's answer
			}
			return res
		}
	})
	var nr *peerclient.NoRoadError
	var te *peerclient.TicketError
	switch {
	case errors.As(err, &nr) && !nr.FellBack: // after a fall-back, the first failure is the answer
		fail = readFailure{o: proto.Unavailable, roadFault: true, detail: noRoadDetail(t.Peer, nr.Err)}
	case errors.As(err, &te):
		fail = readFailure{o: proto.Unavailable, roadFault: true, road: string(te.Road), detail: proto.NotSent(fmt.Sprintf("no ticket for %s (%v)", t.Peer, te.Err), t.Peer)}
	}
	if fail.o == "" {
		return // answered
	}
	// Stale only when the peer could not be reached: an owner app that is
	// down or slow is the owner's answer, not a reason to show old data
	// as if the road had failed (docs/protocol.md).
	if isGet && fail.roadFault && (fail.o == proto.Unavailable || fail.o == proto.Timeout) {
		if e := cr.cfg.Cache.Get(key, r.Header); e != nil && e.StaleOK() {
			cr.cfg.OnRead(proto.Stale)
			cr.serveCached(w, r, e, fail.detail)
			return
		}
	}
	cr.cfg.OnRead(fail.o)
	proto.WriteError(w, fail.o.Status(), proto.ErrorBody{Error: string(fail.o), Detail: fail.detail, Peer: t.Peer, Road: fail.road})
}

func mapOwnerReadReply(peer string, cand roads.Candidate, pe proto.PeerError, status int, said string) readFailure {
	if said == "" {
		said = fmt.Sprintf("%d %s", status, http.StatusText(status))
	}
	f := readFailure{road: string(cand.Road), detail: fmt.Sprintf("%s: %s", peer, said)}
	switch pe {
	case proto.PeerUnauthorized:
		f.o, f.roadFault = proto.Forbidden, true
		f.detail = fmt.Sprintf("%s refused us at its door twice, with a renewed ticket too (%s)", peer, said)
	case proto.PeerForbidden:
		f.o, f.roadFault = proto.Forbidden, true
		f.detail = fmt.Sprintf("%s refused us at its door (%s)", peer, said)
	case proto.PeerAppNotFound:
		f.o = proto.NotFound
	case proto.PeerTimeout:
		f.o = proto.Timeout
	case proto.PeerBadRequest:
		f.o = proto.BadRequest
	default:
		f.o = proto.Unavailable
	}
	return f
}

// relayRead streams the owner app's answer to the app, keeping a copy for
// the cache when it may be stored and fits.
func (cr *Caller) relayRead(w http.ResponseWriter, resp *http.Response, cand roads.Candidate, key string, reqHeader http.Header, isGet bool) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	proto.StripHop(h)
	h.Set(proto.HeaderOutcome, string(proto.Answered))
	h.Set(proto.HeaderRoute, string(cand.Road))
	w.WriteHeader(resp.StatusCode)
	cr.cfg.OnRead(proto.Answered)
	cbuf := proto.CopyBuffers.Get()
	defer proto.CopyBuffers.Put(cbuf)
	// A copy is kept only of an answer the cache may store (known before
	// its body: status, no-store, Vary: *, a length over the limit).
	var admitted *readcache.Admission
	if isGet {
		admitted = cr.cfg.Cache.Storable(resp.StatusCode, reqHeader, resp.Header, resp.ContentLength)
	}
	if admitted == nil {
		io.CopyBuffer(w, resp.Body, cbuf)
		return
	}
	limit := cr.cfg.Cache.MaxEntry()
	buf := &bytes.Buffer{}
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength)) // one allocation, not a doubling series
	}
	n, err := io.CopyBuffer(io.MultiWriter(w, &cappedWriter{buf: buf, limit: limit}), resp.Body, cbuf)
	if err != nil || n > limit {
		return
	}
	// The app has its header (w's map, written): what is kept is trimmed
	// in place, and PutAdmitted keeps its own copy.
	proto.StripHop(resp.Header)
	resp.Header.Del("Content-Length")
	cr.cfg.Cache.PutAdmitted(admitted, key, resp.Header, buf.Bytes(), string(cand.Road))
}

// serveCached writes a stored answer: fresh when stale is "", else labelled
// stale with the reason.
func (cr *Caller) serveCached(w http.ResponseWriter, r *http.Request, e *readcache.Entry, stale string) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = vs
	}
	h.Set("Age", strconv.Itoa(int(e.Age(cr.cfg.Now()).Seconds())))
	h.Set(proto.HeaderRoute, e.Road)
	if stale == "" {
		h.Set(proto.HeaderOutcome, string(proto.Answered))
	} else {
		h.Set(proto.HeaderOutcome, string(proto.Stale))
		h.Set(proto.HeaderStale, strings.ReplaceAll(stale, "\n", " "))
	}
	h.Set("Content-Length", strconv.Itoa(len(e.Body)))
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		w.Write(e.Body)
	}
}

// cappedWriter keeps at most limit bytes and then stops keeping (it never
// fails, so the copy to the app goes on).
type cappedWriter struct {
	buf   *bytes.Buffer
	limit int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if int64(c.buf.Len()+len(p)) <= c.limit {
		c.buf.Write(p)
	}
	return len(p), nil
}

// noRoadDetail says why no road was chosen; a hold-down says so in the
// words of DESIGN §3, a peer the tailnet says is offline and a peer not
// found again yet since the start in their own.
func noRoadDetail(peer string, err error) string {
	var notYet *roads.NotYetError
	if errors.Is(err, roads.ErrHeldDown) || errors.Is(err, roads.ErrOffline) || errors.As(err, &notYet) {
		return proto.NotSent(err.Error(), peer)
	}
	return proto.NotSent(fmt.Sprintf("%s cannot be reached (%v)", peer, err), peer)
}
