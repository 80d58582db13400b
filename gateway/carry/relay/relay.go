// Package relay is how a body and an answer pass through a Delta: the one
// answer relay of both hops (the owner Delta passing its app's answer to
// the caller's Delta, and the caller's Delta passing it to its app) and of
// both kinds of exchange (reads, and calls' answers). Relay is the one
// call, its variations fields of an Answer (this hop's own headers, a copy
// kept, a pass of its own, what to tell on a cut), so that the order of
// head, body, trailers and cut cannot be got wrong: the head is written
// (its headers without hop-by-hop ones and Delta's, its length, the
// trailers it announces) and passed on as it arrives, the body flows as
// it comes, then the trailers follow, or an answer that broke off is cut
// so that nobody takes it for a whole one. No limit of Delta's own bounds
// an answer in progress: a quiet body lives as long as the app and its
// client keep it (DESIGN §2c). Interim passes a 103 on. Around them: an
// idle limit on a body received (ProgressBody: an upload that stops
// moving), an answer written again from a journal (Recorded), a copy kept
// as a body passes (KeptBody), and the copy buffers (CopyBuffers,
// BigBuffers).
package relay

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// head writes an answer's head to w: status, and header without its
// hop-by-hop fields and Delta's own (an Upgrade is kept on a 426, the
// only answer it belongs to); length as Content-Length when it is known
// and the answer is not a HEAD's (a HEAD's keeps the one its header says:
// the length of what a GET would get), and there are no trailers to
// follow (they need a chunked body); the names trailer announces (its keys, as
// http.Response.Trailer holds them once the head is read), so that they
// can follow the body (Trailers); and set, this hop's own fields (name,
// value pairs; an empty value is not set).
func head(w http.ResponseWriter, status int, header http.Header, length int64, trailer http.Header, method string, set ...string) {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	proto.StripHopAnswer(h, status)
	if len(trailer) > 0 {
		h.Del("Content-Length") // the body goes chunked, with its trailers
		// Announced: the names that may pass (not Delta's, not
		// hop-by-hop), and not a header's too (net/http would send the
		// header's value again as the trailer's).
		t := trailer.Clone()
		proto.StripHop(t)
		names := make([]string, 0, len(t))
		for k := range t {
			if _, isHeader := h[k]; !isHeader {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		if len(names) > 0 {
			h["Trailer"] = names
		}
	} else if length >= 0 && method != http.MethodHead {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] != "" {
			h.Set(set[i], set[i+1])
		}
	}
	w.WriteHeader(status)
}

// passHead sends the head written to w (Head) at once, unless ready: the
// answer's first body bytes have arrived with it, and go in the same
// write (the first Flow). An answer's head is passed on when it arrives,
// not held for its body (DESIGN §2c): a long-poll's client has its 200
// at once, and its body when the event comes. It reports whether w took
// it.
func passHead(w http.ResponseWriter, ready bool) error {
	if ready {
		return nil
	}
	return flusherOf(w)()
}

// ready reports whether body has bytes waiting (a body of Delta's HTTP
// client, h1, says how many it holds): a read now takes them without
// waiting.
func ready(body io.Reader) bool {
	b, ok := body.(interface{ Buffered() int })
	return ok && b.Buffered() > 0
}

// trailers writes what came after an answer's body (trailer, read once
// the body ended: http.Response.Trailer), after its body was passed on
// whole. Delta's own names and hop-by-hop ones are not passed on. Trailers
// that were not announced in the head are passed on too when the answer
// is chunked (net/http's TrailerPrefix); an answer of a known length has
// nowhere to put them.
func trailers(w http.ResponseWriter, trailer http.Header) {
	if len(trailer) == 0 {
		return
	}
	t := trailer.Clone()
	proto.StripHop(t)
	h := w.Header()
	for k, vs := range t {
		if len(vs) > 0 {
			h[http.TrailerPrefix+k] = vs
		}
	}
}

// Kept is an answer's header as a journal keeps it (proto.KeptHeader),
// with its trailers under net/http's TrailerPrefix ("Trailer:X-Sum"), so
// that an answer written again from the journal (Recorded) ends with
// them as it did.
func Kept(header, trailer http.Header) http.Header {
	h := proto.KeptHeader(header)
	if len(trailer) > 0 {
		t := trailer.Clone()
		proto.StripHop(t)
		for k, vs := range t {
			if len(vs) > 0 {
				h[http.TrailerPrefix+k] = vs
			}
		}
	}
	return h
}

// Recorded writes an answer the journal kept (Kept): status, header, this
// hop's own fields set (name, value pairs; an empty value is not set), and
// body whole, then its trailers. Its length is given unless it has
// trailers, which need a chunked body.
func Recorded(w http.ResponseWriter, status int, header http.Header, body []byte, set ...string) {
	h := w.Header()
	trailers := false
	for k, vs := range header {
		h[k] = vs
		trailers = trailers || strings.HasPrefix(k, http.TrailerPrefix)
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] != "" {
			h.Set(set[i], set[i+1])
		}
	}
	if !trailers {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	w.Write(body)
}

// abort cuts the answer being written to w: its connection is closed (or
// its stream reset) without the body's proper end, so that the client
// cannot take what came for the whole answer. It does not return.
func abort() { panic(http.ErrAbortHandler) }

// BufferPool lends copy buffers to the relays of bodies, so a relay does
// not allocate one each time: 32 KiB ones (CopyBuffers), and 256 KiB ones
// (BigBuffers) to a Flow whose answer keeps coming. (In round 1, on
// net/http's client and server, 256 KiB pieces from 1 MiB on were
// measured 5-10 % slower on a 1 GiB read; on Delta's own HTTP/1.1 engine
// and raw socket calls, 1 MiB reads and a 1 GiB read ran faster with
// them: docs/benchmarks.md.)
type BufferPool struct{ p sync.Pool }

// CopyBuffers lends the 32 KiB buffers of every relay of a body.
var CopyBuffers = &BufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

// BigBuffers lends the buffers of a Flow that has more waiting than a
// CopyBuffers one holds.
var BigBuffers = &BufferPool{p: sync.Pool{New: func() any { b := make([]byte, bigBuffer); return &b }}}

// bigBuffer is the size of a BigBuffers buffer: a read of an answer that
// keeps coming takes up to 256 KiB at once (a read and a write of each
// hop's, and a flush, for every 256 KiB instead of every 32 KiB).
const bigBuffer = 256 << 10

// bigAfter is how much of an answer passes in 32 KiB pieces before a
// read that comes full takes a big buffer: answers of up to 128 KiB never
// take one (at 64 KiB one was no faster).
const bigAfter = 128 << 10

// Get lends a buffer; Put takes it back, by the pointer the pool keeps,
// so that returning it allocates nothing.
func (b *BufferPool) Get() *[]byte  { return b.p.Get().(*[]byte) }
func (b *BufferPool) Put(p *[]byte) { b.p.Put(p) }

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
	end  bool // read to its end: no deadline is set again
}

func (b *progressBody) Read(p []byte) (int, error) {
	if b.end {
		// The server lifted the read deadline at the body's end, to watch
		// for its client hanging up: one set again now would end the
		// request when it passed (DESIGN §2c).
		return 0, io.EOF
	}
	// An error means the writer cannot set deadlines (a test recorder):
	// the door's own limits stand then.
	_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.rc.Read(p)
	b.end = err == io.EOF
	if err != nil && err != io.EOF {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("the body made no progress for %s (%w)", b.idle, err)
		}
	}
	return n, err
}

func (b *progressBody) Close() error { return b.rc.Close() }

// ErrWriterGone marks a Flow that stopped because the side it wrote to
// would not take more (the app went away).
var ErrWriterGone = errors.New("the connection written to went away")

// Flow copies src to w as it arrives, flushing each piece (an answer
// streams: what the owner wrote reaches the app now), and writes each
// piece to also as well, when not nil (a copy kept, a count). It returns
// the bytes copied and why it stopped: nil at src's end, ErrWriterGone
// (wrapped) when w would not take more, or src's error.
func Flow(w http.ResponseWriter, src io.Reader, also io.Writer) (int64, error) {
	pool := CopyBuffers
	bp := pool.Get()
	defer func() { pool.Put(bp) }()
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
		if m == len(buf) && n > bigAfter && pool == CopyBuffers {
			// More may be waiting than the buffer held: an answer that
			// keeps coming goes on in bigger pieces (one of up to
			// bigAfter never takes a big buffer).
			pool.Put(bp)
			pool, bp = BigBuffers, BigBuffers.Get()
			buf = *bp
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
