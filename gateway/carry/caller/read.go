package caller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/carry/peerclient"
	"github.com/delta-roads/delta/gateway/carry/readcache"
	"github.com/delta-roads/delta/gateway/carry/relay"
	"github.com/delta-roads/delta/gateway/carry/transfer"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/pintls"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// readGrace is how long past the connect timeout and a timeout the app's
// client said (X-Delta-Timeout, or its forward's) a read waits for the
// head of the owner's reply: the owner's Delta answers 504 itself at that
// timeout, and its reply has to travel. With no timeout said, the owner
// app's own timeout (or none) decides, and this side waits as long as
// its client does.
const readGrace = time.Second

// MaxResumes is how many times one read's answer is continued on a fresh
// road (DESIGN §2a).
const MaxResumes = 3

// errHeadTimeout is the cause a read's context ends with when the owner's
// Delta did not reply by the timeout said and readGrace, so that its
// failure names it.
var errHeadTimeout = errors.New("no answer's head in time")

// Read carries a read to its peer: fresh answers come from the cache, a
// failing thunderbolt/lan road is dropped and one fresh road is tried, and
// when the peer cannot be reached a stored answer is served as stale
// (DESIGN §5). The answer's head is passed on as it arrives, and its body
// streams: no limit of Delta's own bounds a quiet answer (§2c); a body
// whose road is lost is continued on a fresh road when it can be, and
// otherwise cut, never ended as if whole (§2a). A client that stops
// waiting ends its own read and nothing else: the road is kept.
func (cr *Caller) Read(w http.ResponseWriter, r *http.Request, t Target) {
	key := readcache.KeyAt(t.Peer, t.App, t.PathQuery, t.Host+t.Prefix)
	if t.Authorization != "" {
		// A client's own login (through a forward): its answers are its
		// own, found only by the same credentials (issue 63, D1).
		key = readcache.Credentialed(key, t.Authorization)
	}
	// Only GET is cached, and not with a cookie: the cache is shared by
	// every app on this computer, and a cookie's answer is its holder's.
	isGet := r.Method == http.MethodGet
	cacheable := isGet && t.Cookie == ""
	body, err := readBody(r)
	if err != nil {
		cr.cfg.OnRead(localapi.BadRequest)
		if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
			// As for a call's body over the limit: read (and drop) up
			// to 64 MiB of it first, so that an app still writing gets
			// this answer, not a reset.
			io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
		}
		doors.RefuseAndClose(w)
		proto.WriteError(w, http.StatusRequestEntityTooLarge, localapi.ErrorBody{Error: string(localapi.BadRequest), Detail: proto.NotSent(err.Error(), ""), Peer: t.Peer}.With(localapi.NothingSent))
		return
	}
	var stored *readcache.Entry
	var validate http.Header
	if cacheable {
		stored = cr.cfg.Cache.Get(key, r.Header)
		if stored != nil && !readcache.RequestBypasses(r.Header) && stored.Fresh(cr.cfg.Now()) {
			cr.cfg.OnRead(localapi.Answered)
			cr.cfg.OnCacheHit()
			cr.serveCached(w, r, stored, "")
			return
		}
		// Not fresh, or the app asked for a fresh answer: asked with
		// the stored answer's validators, a 304 serves it again
		// without its body crossing the road (RFC 9111 §4.3). An app's
		// own conditional request goes as it is, and its 304 is its own.
		if stored != nil && !readcache.Conditional(r.Header) {
			validate = stored.Validators()
		}
	}
	rd := &readRun{cr: cr, w: w, r: r, t: t, key: key, isGet: cacheable, body: body, stored: stored, validate: validate}
	err = cr.cfg.Peers.Do(r.Context(), peerclient.Read, t.Peer, t.Pin, rd.attempt)
	fail := rd.fail
	var un *peerclient.Unattempted
	if errors.As(err, &un) && !un.FellBack && !fail.gaveUp { // after a fall-back, the first failure is the answer
		fail = readFailure{o: un.Outcome(), roadFault: true, g: un.Guarantee(), road: string(un.Road), detail: un.Detail}
	}
	if fail.o == "" || fail.gaveUp {
		return // answered, or nobody waits for it
	}
	// Stale only when the peer could not be reached: an owner app that is
	// down or slow is the owner's answer, not a reason to show old data
	// as if the road had failed (docs/protocol.md).
	// Nor when the app asked for a fresh answer (Cache-Control: no-cache
	// or max-age=0): RFC 9111 §5.2.1.4 forbids a stored one unvalidated.
	if cacheable && fail.roadFault && (fail.o == localapi.Unavailable || fail.o == localapi.Timeout) && !readcache.RequestBypasses(r.Header) {
		if e := cr.cfg.Cache.Get(key, r.Header); e != nil && e.StaleOK() {
			cr.cfg.OnRead(localapi.Stale)
			cr.serveCached(w, r, e, fail.detail)
			return
		}
	}
	cr.cfg.OnRead(fail.o)
	proto.WriteError(w, fail.o.Status(), localapi.ErrorBody{Error: string(fail.o), Detail: fail.detail, Peer: t.Peer, Road: fail.road}.With(fail.g))
}

// readRun is one read being carried.
type readRun struct {
	cr  *Caller
	w   http.ResponseWriter
	r   *http.Request
	t   Target
	key string
	// isGet reports whether the read is a GET the cache serves and keeps
	// (no cookie).
	isGet bool
	// body is what the read carries (a PROPFIND's properties), whole,
	// so that it can be sent again; nil for none.
	body []byte
	// stored is the cache's answer to this read, not fresh, if it has
	// one; validate the headers that revalidate it, if it can be.
	stored   *readcache.Entry
	validate http.Header
	fail     readFailure
}

// request is the read as it goes to the owner on try, with the extra
// header (a resumption's range); its context ends with a cause.
func (rd *readRun) request(ctx context.Context, try peerclient.Try, extra http.Header) (*http.Request, error) {
	h := rd.t.header(rd.r.Header)
	rd.t.Wait.Set(h)
	if app := rd.r.Header.Get(localapi.HeaderApp); app != "" {
		h.Set(localapi.HeaderApp, app)
	}
	for k, vs := range extra {
		h[k] = vs
	}
	var body io.Reader
	if len(rd.body) > 0 {
		body = bytes.NewReader(rd.body) // Content-Length and GetBody: it may be sent again
	}
	return peerclient.AppRequest(ctx, try, rd.r.Method, rd.t.App, rd.t.PathQuery, h, body)
}

// readBody reads the body a read carries (proto.ReadMayCarryBody), whole:
// at most proto.MaxReadBody bytes, so that it can be sent again on a fresh
// road. An app that sent Expect: 100-continue is told 100 Continue as it
// is read.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > proto.MaxReadBody {
		return nil, fmt.Errorf("a %s carries at most %d bytes (it is held to be sent again on a fresh road), and this one announces %d", r.Method, proto.MaxReadBody, r.ContentLength)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, proto.MaxReadBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("the %s's body did not arrive whole (%v)", r.Method, err)
	case len(b) > proto.MaxReadBody:
		return nil, fmt.Errorf("a %s carries at most %d bytes (it is held to be sent again on a fresh road), and this one has more", r.Method, proto.MaxReadBody)
	}
	return b, nil
}

// roundTrip sends req on the peer's pool and waits for the head: as long
// as the app's client does, or, when it said a timeout, until the owner's
// Delta should have replied (the connect timeout, the timeout and
// readGrace); interim 103 answers go to onEarly. The returned cancel ends
// the exchange (its body).
func (rd *readRun) roundTrip(try peerclient.Try, extra http.Header, onEarly func(int, textproto.MIMEHeader) error) (*http.Response, roads.Candidate, error, error, context.CancelCauseFunc, error) {
	ctx, cancel := context.WithCancelCause(rd.r.Context())
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{Got1xxResponse: onEarly})
	req, err := rd.request(ctx, try, extra)
	if err != nil {
		cancel(nil)
		return nil, try.Cand, nil, nil, nil, err
	}
	var head *time.Timer
	if said := rd.t.Wait.Said; said > 0 {
		head = time.AfterFunc(try.Cand.Road.ConnectTimeout()+said+readGrace, func() { cancel(errHeadTimeout) })
	}
	resp, used, dialErr, err := rd.cr.cfg.Peers.RoundTrip(req, try.Cand)
	if head != nil {
		head.Stop()
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		cancel(nil)
		return nil, used, dialErr, err, nil, nil
	}
	return resp, used, nil, nil, cancel, nil
}

// early passes an owner's 103 Early Hints on to the app (DESIGN §2a);
// other interim answers are not the app's business.
func (rd *readRun) early(code int, h textproto.MIMEHeader) error {
	relay.Interim(rd.w, code, h)
	return nil
}

// attempt is one try at the read (peerclient.Do's attempt).
func (rd *readRun) attempt(try peerclient.Try) peerclient.Result {
	cr, t := rd.cr, rd.t
	cand := try.Cand
	started := cr.cfg.Now()
	resp, used, dialErr, err, cancel, reqErr := rd.roundTrip(try, rd.validate, rd.early)
	if reqErr != nil {
		rd.fail = readFailure{o: localapi.BadRequest, g: localapi.NothingSent, detail: proto.NotSent(fmt.Sprintf("the path %q does not make a valid request (%v)", t.PathQuery, reqErr), "")}
		return peerclient.Replied()
	}
	if err != nil {
		if rd.gone() {
			rd.fail = readFailure{gaveUp: true}
			cr.gaveUp("read", t, used, started, "before the answer's head")
			return peerclient.GaveUp(used)
		}
		rd.fail = readFailure{o: localapi.Unavailable, road: string(used.Road), roadFault: true,
			detail: fmt.Sprintf("%s did not answer the read: %v", used, err)}
		if dialErr != nil {
			rd.fail.g = localapi.NothingSent
		}
		j := peerclient.Judge(peerclient.BeforeHead, false, err)
		var mm *pintls.MismatchError
		switch {
		case errors.As(err, &mm):
			rd.fail.o, rd.fail.g = localapi.Forbidden, localapi.NothingSent
			rd.fail.detail = proto.NotSent(fmt.Sprintf("%s's certificate on %s is not the one learned over the tailnet (%v)", t.Peer, cand, mm), t.Peer)
			cr.cfg.Log.Warn("certificate pin mismatch", "peer", t.Peer, "road", cand.Road, "address", cand.Address, "pinned", mm.Want, "presented", mm.Got)
		case errors.Is(err, errHeadTimeout):
			rd.fail.o = localapi.Timeout
			rd.fail.detail = fmt.Sprintf("%s did not reply to the read within %s, although its app's timeout was %s (the road is being probed)",
				used, used.Road.ConnectTimeout()+t.Wait.Said+readGrace, t.Wait.Said)
		}
		return peerclient.ExchangeFailed(used, cand, dialErr, j, errors.New(rd.fail.detail))
	}
	reply := peerclient.Classify(resp)
	if reply.Err == proto.PeerAnswered && resp.StatusCode == http.StatusNotModified && rd.validate != nil {
		// The stored answer is still the owner's: served again, freshened
		// with what the 304 says.
		cancel(nil)
		resp.Body.Close()
		rd.fail = readFailure{}
		proto.StripHop(resp.Header)
		e := cr.cfg.Cache.Freshen(rd.stored, rd.key, rd.r.Header, resp.Header, string(used.Road))
		cr.cfg.OnRead(localapi.Answered)
		cr.cfg.OnRevalidated()
		cr.serveCached(rd.w, rd.r, e, "")
		return peerclient.Replied()
	}
	if reply.Err == proto.PeerAnswered {
		rd.fail = readFailure{}
		rd.relay(resp, cancel, used)
		return peerclient.Replied()
	}
	cancel(nil)
	rd.fail = mapOwnerReadReply(t.Peer, string(used.Road), reply)
	switch why := errors.New(rd.fail.detail); {
	case reply.Err == proto.PeerUnauthorized:
		return peerclient.RefusedAtDoor(used, why)
	case rd.fail.roadFault:
		return peerclient.FailedOn(used, why)
	}
	return peerclient.Replied() // the owner's answer
}

// gone reports whether the read's app (its client) stopped waiting: its
// request's context ended (its connection closed, or it went away).
func (rd *readRun) gone() bool { return rd.r.Context().Err() != nil }

// gaveUp logs and counts an exchange that its app stopped waiting for,
// what (a read, a call, a session) on used's road, begun at started,
// where it stood: it is ended, and the road kept (DESIGN §2c).
func (cr *Caller) gaveUp(what string, t Target, used roads.Candidate, started time.Time, where string) {
	cr.cfg.OnGaveUp(what)
	cr.cfg.Log.Info("an app stopped waiting: its "+what+" is ended, and the road kept", "peer", t.Peer, "app", t.App, "path", t.PathQuery,
		"road", used.Road, "after", cr.cfg.Now().Sub(started).Round(time.Millisecond), "where", where)
}

// relay streams the owner app's answer to the app, keeping a copy for the
// cache when it may be stored and fits; its head is passed on at once. A
// body whose road is lost part way is continued on a fresh road
// (resume), and one that cannot be, or that the owner's end broke off,
// is cut.
func (rd *readRun) relay(resp *http.Response, cancel context.CancelCauseFunc, cand roads.Candidate) {
	cr, w, t := rd.cr, rd.w, rd.t
	started := cr.cfg.Now()
	defer func() { cancel(nil); resp.Body.Close() }()
	cr.cfg.OnRead(localapi.Answered)
	var keep *relay.KeptBody
	var store func()
	last := resp // the answer whose body ends the read: its trailers follow
	relay.Relay(w, relay.Answer{Status: resp.StatusCode, Header: resp.Header, Length: resp.ContentLength, Trailer: &resp.Trailer, Method: rd.r.Method,
		Set:  []string{localapi.HeaderOutcome, string(localapi.Answered), localapi.HeaderRoute, string(cand.Road)},
		Body: resp.Body, // its bytes read ahead pass the head on with them
		Pass: func(w http.ResponseWriter) (http.Header, error) {
			keep, store = rd.keeper(resp, &cand)
			var x *transfer.Transfer
			if cr.cfg.Transfers != nil {
				x = cr.cfg.Transfers.Start(localapi.TransferRead, t.Peer, t.App, t.PathQuery, string(cand.Road))
				defer x.Done()
			}
			var src io.Reader = resp.Body
			firstKeep := keep
			if keep != nil && resp.ContentLength > 0 {
				// An answer of known length is stored once its last bytes have
				// arrived, before they go to the app: an app that reads it again
				// as soon as it has it whole finds it in the cache.
				src = &beforeLast{r: io.TeeReader(src, keep), left: resp.ContentLength, last: store}
				firstKeep = nil // the tee keeps it
			}
			n, err := flowTo(w, src, firstKeep, x)
			broke := true // err is a body's breaking off (not a resumption's failure)
			for resumes := 0; err != nil; resumes++ {
				if errors.Is(err, relay.ErrWriterGone) || rd.gone() {
					// The app's client went away: its read ends there, and
					// nothing else does.
					cr.gaveUp("read", t, cand, started, fmt.Sprintf("after %d bytes of the answer", n))
					return nil, err
				}
				why, dropped := "", false
				if broke {
					j := peerclient.Judge(peerclient.InBody, false, err)
					cr.cfg.Peers.Ended(cand, j, err)
					dropped = j.Cut || j.Evidence != ""
					if !dropped {
						// The owner's end closed the connection short of the
						// answer's end, or broke its framing: its app broke off,
						// or its Delta stopped. Not the road's doing unless the
						// probe it now gets fails (DESIGN §2b, §2c): cut, and not
						// resumed (the same owner would break it again).
						why = "the owner's end broke the answer off (its app broke off, or its Delta stopped); the road is kept unless its probe fails"
					}
				}
				validator, notResumable := Resumable(rd.r.Method, rd.r.Header, resp)
				if why == "" {
					why = notResumable
				}
				if why == "" && resumes >= MaxResumes {
					why = fmt.Sprintf("it was resumed %d times already", MaxResumes)
				}
				if why != "" {
					cr.cfg.OnCut("read")
					cr.cfg.Log.Warn("a read's answer broke off and cannot be resumed; the app's connection is cut so it cannot take the answer for whole",
						"peer", t.Peer, "app", t.App, "path", t.PathQuery, "road", cand.Road, "bytes", n, "err", err, "why_not_resumed", why,
						"road_dropped", dropped)
					return nil, err
				}
				cr.cfg.OnResume()
				cr.cfg.Log.Info("a read's answer broke off; resuming it on a fresh road", "peer", t.Peer, "app", t.App, "path", t.PathQuery,
					"road", cand.Road, "bytes", n, "err", err, "resumption", resumes+1)
				var next *http.Response
				next, cand, err = rd.resume(resp, validator, n)
				if broke = err == nil; !broke {
					continue // tried again, up to MaxResumes
				}
				if x != nil {
					x.SetRoad(string(cand.Road))
				}
				var m int64
				m, err = flowTo(w, next.Body, keep, x)
				next.Body.Close()
				n += m
				last = next
			}
			return last.Trailer, nil
		},
	})
	if keep == nil || len(last.Trailer) > 0 {
		return // a HEAD's, or nothing to keep
	}
	store() // an answer of unknown length, or one resumed
}

// keeper is how a read's answer is kept for the cache as it passes: a
// copy only of an answer the cache may store (known before its body:
// status, no-store, Vary: *, a length over the limit, an event stream),
// and store, which puts it in the cache once, when it came whole, under
// the road *cand names then (a resumed read's last). keep is nil when
// nothing is kept.
func (rd *readRun) keeper(resp *http.Response, cand *roads.Candidate) (keep *relay.KeptBody, store func()) {
	cr, t := rd.cr, rd.t
	var admitted *readcache.Admission
	// An answer with trailers is not kept: the cache keeps no trailers,
	// and one served without them would not be the answer.
	// An answer to a request with its client's own credentials is kept
	// only when the app said a shared cache may keep it (RFC 9111 §3.5).
	if rd.isGet && len(resp.Trailer) == 0 && (t.Authorization == "" || readcache.SharedWithCredentials(resp.Header)) {
		if admitted = cr.cfg.Cache.Storable(resp.StatusCode, rd.r.Header, resp.Header, resp.ContentLength); admitted != nil {
			keep = &relay.KeptBody{Limit: cr.cfg.Cache.MaxEntry()}
			if rd.stored != nil {
				// The answer read again is most often the one stored:
				// compared as it passes, it is copied only if it is not.
				keep.Like = rd.stored.Body
			}
			keep.Grow(resp.ContentLength)
		}
	}
	stored := false
	return keep, func() {
		if body, ok := keep.Kept(); ok && !stored {
			stored = true
			// The app has its header (w's map, written): what is kept is
			// trimmed in place, and PutAdmitted keeps its own copy.
			proto.StripHop(resp.Header)
			resp.Header.Del("Content-Length")
			cr.cfg.Cache.PutAdmitted(admitted, rd.key, resp.Header, body, string(cand.Road))
		}
	}
}

// beforeLast calls last once the reads from r reach left bytes, before
// the read that reaches it returns: the whole body has arrived, and its
// last bytes have not yet been passed on.
type beforeLast struct {
	r    io.Reader
	left int64
	last func()
}

func (b *beforeLast) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
		if b.left == 0 {
			b.last()
		}
	}
	return n, err
}

// resume asks for the rest of first's body from byte n, on a freshly
// chosen road, and returns the answer when it continues first exactly (a
// 206 of that range, of the same representation).
func (rd *readRun) resume(first *http.Response, validator string, n int64) (*http.Response, roads.Candidate, error) {
	extra := http.Header{"Range": {fmt.Sprintf("bytes=%d-", n)}, "If-Range": {validator}}
	var out *http.Response
	var cand roads.Candidate
	var last error
	err := rd.cr.cfg.Peers.Do(rd.r.Context(), peerclient.Read, rd.t.Peer, rd.t.Pin, func(try peerclient.Try) peerclient.Result {
		resp, used, dialErr, err, cancel, reqErr := rd.roundTrip(try, extra, nil)
		if reqErr != nil {
			last = reqErr
			return peerclient.Replied()
		}
		if err != nil {
			last = fmt.Errorf("%s: %w", used, err)
			if rd.gone() {
				return peerclient.GaveUp(used)
			}
			return peerclient.ExchangeFailed(used, try.Cand, dialErr, peerclient.Judge(peerclient.BeforeHead, false, err), err)
		}
		if why := Continues(first, resp, n); why != "" {
			cancel(nil)
			resp.Body.Close()
			last = fmt.Errorf("%s did not continue the answer: %s", rd.t.Peer, why)
			return peerclient.Replied()
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		out, cand = resp, used
		return peerclient.Replied()
	})
	if out != nil {
		return out, cand, nil
	}
	if last == nil {
		last = err
	}
	return nil, cand, last
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c *cancelOnClose) Close() error { c.cancel(nil); return c.ReadCloser.Close() }

// Resumable says whether an answer to a read of method with request
// header req may be continued on another road, with the validator for
// If-Range; or why not (DESIGN §2a): a 200 to a GET without a range of its
// own, with Accept-Ranges: bytes and a strong validator (an ETag not W/,
// or a Last-Modified at least a second before the answer's Date, RFC 9110
// §8.8.2.2).
func Resumable(method string, req http.Header, resp *http.Response) (validator, why string) {
	switch {
	case method != http.MethodGet:
		return "", method + " answers are not resumed"
	case req.Get("Range") != "":
		return "", "the app asked for a range itself"
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Sprintf("the answer was %d, not 200", resp.StatusCode)
	case !proto.HasToken(resp.Header.Values("Accept-Ranges"), "bytes"):
		return "", "the owner app does not offer ranges (no Accept-Ranges: bytes)"
	}
	if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		return et, ""
	}
	lm, err1 := http.ParseTime(resp.Header.Get("Last-Modified"))
	date, err2 := http.ParseTime(resp.Header.Get("Date"))
	if err1 == nil && err2 == nil && !date.Before(lm.Add(time.Second)) {
		return resp.Header.Get("Last-Modified"), ""
	}
	return "", "the answer has no strong validator (a strong ETag, or a Last-Modified a second older than its Date)"
}

// Continues says why next (the answer to a resumption from byte n) does
// not continue first exactly, or "".
func Continues(first, next *http.Response, n int64) string {
	if next.StatusCode != http.StatusPartialContent {
		return fmt.Sprintf("it answered %d, not 206 (the resource changed?)", next.StatusCode)
	}
	var start, end, total int64
	if _, err := fmt.Sscanf(next.Header.Get("Content-Range"), "bytes %d-%d/%d", &start, &end, &total); err != nil {
		return fmt.Sprintf("its Content-Range %q is not bytes N-M/TOTAL", next.Header.Get("Content-Range"))
	}
	switch {
	case start != n:
		return fmt.Sprintf("it starts at byte %d, not %d", start, n)
	case end != total-1:
		return fmt.Sprintf("it ends at byte %d of %d, not at the end", end, total)
	case first.ContentLength >= 0 && total != first.ContentLength:
		return fmt.Sprintf("the whole is %d bytes now, not %d", total, first.ContentLength)
	case first.Header.Get("ETag") != "" && next.Header.Get("ETag") != first.Header.Get("ETag"):
		return fmt.Sprintf("its ETag is %s, not %s", next.Header.Get("ETag"), first.Header.Get("ETag"))
	case first.Header.Get("Last-Modified") != "" && next.Header.Get("Last-Modified") != first.Header.Get("Last-Modified"):
		// An owner that ignores If-Range after the file changed answers
		// 206 of the new file: without this check the app would get the
		// start of one version and the rest of another as one answer.
		return fmt.Sprintf("its Last-Modified is %q, not %q (another version)", next.Header.Get("Last-Modified"), first.Header.Get("Last-Modified"))
	}
	return ""
}

// flowTo copies src to the app as it arrives (relay.Flow), keeping a copy
// in keep (if not nil) and counting it in x (if not nil).
func flowTo(w http.ResponseWriter, src io.Reader, keep *relay.KeptBody, x *transfer.Transfer) (int64, error) {
	var also io.Writer
	switch {
	case keep != nil && x != nil:
		also = io.MultiWriter(keep, x)
	case keep != nil:
		also = keep
	case x != nil:
		also = x
	}
	return relay.Flow(w, src, also)
}

// serveCached writes a stored answer: fresh when stale is "", else labelled
// stale with the reason.
func (cr *Caller) serveCached(w http.ResponseWriter, r *http.Request, e *readcache.Entry, stale string) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = vs
	}
	h.Set("Age", strconv.Itoa(int(e.Age(cr.cfg.Now()).Seconds())))
	h.Set(localapi.HeaderRoute, e.Road)
	if stale == "" {
		h.Set(localapi.HeaderOutcome, string(localapi.Answered))
	} else {
		h.Set(localapi.HeaderOutcome, string(localapi.Stale))
		h.Set(localapi.HeaderStale, strings.ReplaceAll(stale, "\n", " "))
	}
	h.Set("Content-Length", strconv.Itoa(len(e.Body)))
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		w.Write(e.Body)
	}
}
