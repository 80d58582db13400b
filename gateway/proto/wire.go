package proto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/localapi"
)

// ReceiptState is what an owner knows of a call it was sent: the state of
// its receipt, as its journal keeps it and as GET /delta/v1/calls/{id}
// says it (CallStateJSON.State).
type ReceiptState string

// The receipt states. A fence is a receipt in state ReceiptFenced.
const (
	ReceiptRunning       ReceiptState = "running"         // the owner app is working on it
	ReceiptAnswered      ReceiptState = "answered"        // the owner app answered
	ReceiptNotCarriedOut ReceiptState = "not_carried_out" // refused before the app had it
	// ReceiptAppUnknown: the app took it and its connection broke before
	// it answered.
	ReceiptAppUnknown ReceiptState = "app_unknown"
	// ReceiptInterrupted: Delta restarted while the app worked on it.
	ReceiptInterrupted ReceiptState = "interrupted"
	// ReceiptFenced: it never arrived, and its id is fenced: it will be
	// refused if it comes.
	ReceiptFenced ReceiptState = "fenced"
	// ReceiptNeverArrived and ReceiptExpired are said, never stored: no
	// receipt within the time the owner vouches for, or one older than
	// its retention.
	ReceiptNeverArrived ReceiptState = "never_arrived"
	ReceiptExpired      ReceiptState = "expired"
)

// StoredReceiptStates are the states a receipt is kept in, in the order a
// person reads them.
var StoredReceiptStates = []ReceiptState{ReceiptRunning, ReceiptAnswered, ReceiptNotCarriedOut, ReceiptAppUnknown, ReceiptInterrupted, ReceiptFenced}

// CallStateJSON is the JSON of GET /delta/v1/calls/{id} (DESIGN §4): what
// the owner knows of a call. The owner writes it, the reconciler reads it.
type CallStateJSON struct {
	State         ReceiptState     `json:"state"`
	Digest        string           `json:"digest"`
	ReceivedAt    string           `json:"received_at,omitempty"`
	Answer        *localapi.Answer `json:"answer,omitempty"`
	AnswerExpired bool             `json:"answer_expired"`
}

// SettledJSON is the body of POST /delta/v1/calls/{id}/settled: the
// caller's Delta tells the owner that a person there settled the call, so
// that the owner stops listing its receipt as one to check (DESIGN §4).
type SettledJSON struct {
	// State is the caller's word for the call: carried_out or
	// not_carried_out.
	State string `json:"state"`
	// By is who settled it: "a person".
	By string `json:"by"`
	// Note is the person's note, at most MaxSettleNote bytes.
	Note string `json:"note,omitempty"`
	// At is when the person settled it, RFC 3339: the owner shows it (a
	// time after the owner's now, or none, is taken as now).
	At string `json:"at"`
}

// SettledReplyJSON is the owner's answer to a SettledJSON: whether it
// keeps a receipt of the call to record it on (it may never have received
// the call, or have swept it), and the receipt's state.
type SettledReplyJSON struct {
	Recorded bool         `json:"recorded"`
	State    ReceiptState `json:"state,omitempty"`
}

// MaxSettleNote bounds a person's note on a settlement or a check.
const MaxSettleNote = 1000

// RFC3339 is how times are written on the wire: RFC 3339, UTC.
func RFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// WriteJSON writes v as an indented JSON answer (the local API, read by
// people with curl too), never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v, "  ") }

// WritePeerJSON writes v as a compact JSON answer (the peer API, read by
// Deltas), never cached.
func WritePeerJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v, "") }

func writeJSON(w http.ResponseWriter, status int, v any, indent string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	// The status is written; a client gone meanwhile has nothing to read.
	_ = enc.Encode(v)
}

// ForwardHeaders copies an app's headers for the next hop, without
// hop-by-hop headers, credentials, X-Delta-* and the Forwarded fields a
// client may have sent (only Delta says where a request came from: the
// owner sets them, DESIGN §2b). Cookie stays: the caller's Delta removes
// it unless the request came through a forward (ForwardCookie).
func ForwardHeaders(in http.Header) http.Header {
	h := in.Clone()
	StripHop(h)
	for _, k := range forwardedHeaders {
		h.Del(k)
	}
	h.Del("Content-Length")
	return h
}

// forwardedHeaders say where a request came from; a client's own values
// are never passed on as Delta's.
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Prefix", "X-Real-Ip"}

// BufferPool lends 32 KiB copy buffers to the relays of bodies, so a relay
// does not allocate one each time. (Bigger ones for big bodies, 256 KiB
// from 1 MiB, were measured and not kept: a 1 GiB read through two
// Deltas was 5-10 % slower with them, docs/benchmarks.md.)
type BufferPool struct{ p sync.Pool }

// CopyBuffers is the one BufferPool.
var CopyBuffers = &BufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

// Get lends a buffer; Put takes it back, by the pointer the pool keeps,
// so that returning it allocates nothing.
func (b *BufferPool) Get() *[]byte  { return b.p.Get().(*[]byte) }
func (b *BufferPool) Put(p *[]byte) { b.p.Put(p) }

// NotSent phrases what an app is told of a request that never left this
// computer: the cause, then "nothing was sent" (to peer, when one is
// named). Every such guarantee the caller's side gives is written here.
func NotSent(cause, peer string) string {
	if peer == "" {
		return cause + "; nothing was sent"
	}
	return cause + "; nothing was sent to " + peer
}

// NotCarriedOut phrases an owner's refusal before anything ran: the cause,
// then "nothing was carried out". Every such guarantee the owner gives is
// written here.
func NotCarriedOut(cause string) string { return cause + "; nothing was carried out" }

// DoorLimits bound what a client may take of a listener.
type DoorLimits struct {
	// Header is how long a client has for its request's headers; Request
	// for the whole request, its body included (a body announced and
	// never sent is dropped then). Idle closes a keep-alive connection no
	// request uses. The handler itself is not bounded: a call may wait
	// for its owner, and a ?wait= long-poll, up to 600 s (the server lifts
	// the read deadline once the body is read, and still sees a client
	// that goes away).
	Header, Request, Idle time.Duration
	// PerSource caps the connections one source address holds at once
	// (0: no cap); one over it is answered Busy (nothing is carried out)
	// and closed, given BusyWithin to send its request's head, and
	// OnRefused told its remote address.
	PerSource int
	OnRefused func(remote string)
	// Busy writes the refusal of a connection over the cap (before it
	// the connection is marked to close). If nil, a 503 door_busy.
	Busy func(w http.ResponseWriter)
}

// BusyWithin is how long a connection over its source's cap has to send
// its request's head, to be told it was refused.
const BusyWithin = 2 * time.Second

// DoorServer is the http.Server of each of Delta's doors (the local API,
// every peer listener), with its limits.
func DoorServer(h http.Handler, errLog *log.Logger, l DoorLimits) *http.Server {
	// OPTIONS * reaches the handler, which refuses it after its guard
	// (DESIGN §2a), instead of Go's general answer of 200.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: l.Header, ReadTimeout: l.Request, IdleTimeout: l.Idle, ErrorLog: errLog,
		DisableGeneralOptionsHandler: true}
	if l.PerSource > 0 {
		sc := &sourceCap{max: l.PerSource, refused: l.OnRefused, n: map[string]int{}, conns: map[net.Conn]string{}, over: map[net.Conn]bool{}}
		srv.ConnState = sc.state
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, capKey{}, &capHold{cap: sc, conn: c})
		}
		busy := l.Busy
		if busy == nil {
			busy = func(w http.ResponseWriter) {
				WriteError(w, http.StatusServiceUnavailable, ErrorBody{Error: string(PeerBusy), Detail: NotCarriedOut(fmt.Sprintf("this door holds %d connections from one source at once, and this one is over", l.PerSource))}.With(NotCarried))
			}
		}
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold, ok := r.Context().Value(capKey{}).(*capHold); ok && hold.cap.isOver(hold.conn) {
				RefuseAndClose(w)
				busy(w)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	return srv
}

type capKey struct{}

// capHold is a connection of a door with a per-source cap, as its
// requests' contexts know it.
type capHold struct {
	cap  *sourceCap
	conn net.Conn
}

// HijackDone says that the connection a request of ctx came on, taken from
// its server for a session (Hijack), is closed: until then it counts
// against its source's cap, as it did while the server had it. A no-op
// for a connection not taken, or a door without a cap; call it once the
// session has ended (defer it before taking the connection).
func HijackDone(ctx context.Context) {
	if h, ok := ctx.Value(capKey{}).(*capHold); ok {
		h.cap.release(h.conn)
	}
}

// sourceCap counts each source's connections from the server's ConnState
// hook: counted when new, released when closed (once per connection), or,
// for one taken from the server for a session (hijacked), when the session
// says it closed (HijackDone); closed at once when over the cap. A hook rather
// than a wrapped listener keeps *tls.Conn visible to the server. The
// source is remembered per connection: a closed connection may no longer
// know its remote address (tsnet's do not).
type sourceCap struct {
	max     int
	refused func(string)

	mu    sync.Mutex
	n     map[string]int
	conns map[net.Conn]string
	over  map[net.Conn]bool // accepted over the cap: answered Busy, closed
}

// isOver reports whether conn was accepted over its source's cap.
func (c *sourceCap) isOver(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.over[conn]
}

func (c *sourceCap) state(conn net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		remote := "unknown"
		if a := conn.RemoteAddr(); a != nil {
			remote = a.String()
		}
		src := remote
		if h, _, err := net.SplitHostPort(remote); err == nil {
			src = h
		}
		c.mu.Lock()
		c.conns[conn] = src
		c.n[src]++
		over := c.n[src] > c.max
		c.mu.Unlock()
		if over {
			// Answered Busy, not closed unanswered: a caller then knows
			// nothing was carried out. It has BusyWithin for its head.
			c.mu.Lock()
			c.over[conn] = true
			c.mu.Unlock()
			conn.SetDeadline(time.Now().Add(BusyWithin))
			if c.refused != nil {
				c.refused(remote)
			}
		}
	case http.StateClosed:
		c.release(conn)
	}
}

// release stops counting conn, once.
func (c *sourceCap) release(conn net.Conn) {
	c.mu.Lock()
	delete(c.over, conn)
	if src, ok := c.conns[conn]; ok {
		delete(c.conns, conn)
		if c.n[src]--; c.n[src] <= 0 {
			delete(c.n, src)
		}
	}
	c.mu.Unlock()
}

// RefuseAndClose makes the answer written to w the connection's last:
// Connection: close, and no wait for a body the client announced (the
// server would otherwise read up to 256 KiB of it first, and a body that
// never comes would hold the connection). Call it before writing.
func RefuseAndClose(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	// Past the answer, reads of the request body fail at once. An error
	// means the writer cannot set deadlines (a test recorder): nothing to
	// cut short.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// ProgressBody is r's body under an idle limit instead of the door's
// limit on the whole request (DoorLimits.Request): each read may take
// idle, so a body of any size arrives as long as it moves (DESIGN §2a).
// An error names the limit.
func ProgressBody(w http.ResponseWriter, r *http.Request, idle time.Duration) io.ReadCloser {
	return &progressBody{rc: r.Body, ctl: http.NewResponseController(w), idle: idle}
}

type progressBody struct {
	rc   io.ReadCloser
	ctl  *http.ResponseController
	idle time.Duration
}

func (b *progressBody) Read(p []byte) (int, error) {
	// An error means the writer cannot set deadlines (a test recorder):
	// the door's own limits stand then.
	_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("the body made no progress for %s (%w)", b.idle, err)
		}
	}
	return n, err
}

func (b *progressBody) Close() error { return b.rc.Close() }

// Silenced is body under a silence limit: when no byte arrives for idle,
// silent is called (it cancels the exchange that carries body, with its
// cause). X-Delta-Timeout bounds each silence of an answer's body this
// way, never the whole transfer (DESIGN §2a).
func Silenced(body io.ReadCloser, idle time.Duration, silent func()) io.ReadCloser {
	s := &silence{ReadCloser: body, idle: idle}
	s.timer = time.AfterFunc(idle, silent)
	return s
}

type silence struct {
	io.ReadCloser
	idle  time.Duration
	timer *time.Timer
}

func (s *silence) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 {
		s.timer.Reset(s.idle)
	}
	if err != nil {
		s.timer.Stop()
	}
	return n, err
}

func (s *silence) Close() error { s.timer.Stop(); return s.ReadCloser.Close() }

// ErrWriterGone marks a Flow that stopped because the side it wrote to
// would not take more (the app went away).
var ErrWriterGone = errors.New("the connection written to went away")

// Flow copies src to w as it arrives, flushing each piece (an answer
// streams: what the owner wrote reaches the app now), and writes each
// piece to also as well, when not nil (a copy kept, a count). It returns
// the bytes copied and why it stopped: nil at src's end, ErrWriterGone
// (wrapped) when w would not take more, or src's error.
func Flow(w http.ResponseWriter, src io.Reader, also io.Writer) (int64, error) {
	bp := CopyBuffers.Get()
	defer CopyBuffers.Put(bp)
	buf := *bp
	flush := flusherOf(w)
	var n int64
	for {
		m, rerr := src.Read(buf)
		if m > 0 {
			if also != nil {
				also.Write(buf[:m])
			}
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, fmt.Errorf("%w (%v)", ErrWriterGone, werr)
			}
			n += int64(m)
			if err := flush(); err != nil {
				return n, fmt.Errorf("%w (%v)", ErrWriterGone, err)
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// flusherOf is how to flush w: its own FlushError when it has one (as
// net/http's does), else through a ResponseController (which finds it
// in wrappers).
func flusherOf(w http.ResponseWriter) func() error {
	if f, ok := w.(interface{ FlushError() error }); ok {
		return f.FlushError
	}
	return http.NewResponseController(w).Flush
}

// KeptBody keeps at most Limit bytes of a body as it passes (a copy for
// the read cache or a journal), and sums all of it into Sum when that is
// set. Past Limit it keeps nothing, and it never fails, so that what it
// watches goes on.
//
// Like, when set, is a body this one is expected to be (the answer
// stored before): while the bytes passing are Like's, nothing is
// copied, and Kept returns Like itself (or the part of it that came);
// at the first byte that differs, the part that matched is copied and
// keeping goes on as without it. A cache that reads the same unchanged
// answer again allocates nothing for it. Like is never written to.
type KeptBody struct {
	Limit int64
	Sum   hash.Hash
	Like  []byte
	same  int   // bytes of Like matched so far, while Like is followed
	grow  int64 // the size Grow was told
	buf   bytes.Buffer
	over  bool
}

// Grow readies room for a body of n bytes (one allocation, not a
// doubling series), when that fits Limit; with Like, only once the body
// departs from it.
func (k *KeptBody) Grow(n int64) {
	if n > 0 && n <= k.Limit {
		if k.Like != nil {
			k.grow = n
			return
		}
		k.buf.Grow(int(n))
	}
}

func (k *KeptBody) Write(p []byte) (int, error) {
	if k.Sum != nil {
		k.Sum.Write(p)
	}
	if k.over {
		return len(p), nil
	}
	if k.Like != nil {
		if k.same+len(p) <= len(k.Like) && bytes.Equal(k.Like[k.same:k.same+len(p)], p) {
			k.same += len(p)
			return len(p), nil
		}
		// Not the body it was like: keep a copy from here on.
		if k.grow > 0 {
			k.buf.Grow(int(k.grow))
		}
		k.buf.Write(k.Like[:k.same])
		k.Like = nil
	}
	if int64(k.buf.Len()+len(p)) <= k.Limit {
		k.buf.Write(p)
	} else {
		k.over, k.buf = true, bytes.Buffer{}
	}
	return len(p), nil
}

// Kept is the body kept, and false when it was over Limit (nothing is
// kept then).
func (k *KeptBody) Kept() ([]byte, bool) {
	if k.over {
		return nil, false
	}
	if k.Like != nil {
		return k.Like[:k.same:k.same], true
	}
	return k.buf.Bytes(), true
}

// KeptHeader is an answer's header as a journal keeps it: a copy without
// hop-by-hop headers and Content-Length (the body kept says its length).
func KeptHeader(h http.Header) http.Header {
	h = h.Clone()
	StripHop(h)
	h.Del("Content-Length")
	return h
}

// DecodeObject reads one JSON object of at most limit bytes from r into v:
// no field v does not have, no key twice (of two values, a reader and a
// person could each take another), nothing after it. Errors name the
// problem.
func DecodeObject(r io.Reader, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("the body is over %d bytes", limit)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("the body is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("the object holds %q twice", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return err
	}
	if strict.More() {
		return errors.New("more follows the object")
	}
	return nil
}
