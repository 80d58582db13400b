package caller

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// callBody is an app's call body on its way out (DESIGN §2a): the first
// proto.InMemoryBody bytes are read before anything is sent (a body that
// ends within them is small: held whole, its digest known up front), the
// rest streams from the app as the owner takes it, counted and never
// held. A streamed body is summed once, by the owner as it spools it (one
// hash pass): its digest is the one the owner says in its reply
// (learned).
type callBody struct {
	src      io.Reader // the app's body past the head
	head     []byte    // what was read before sending
	whole    bool      // head is the whole body
	max      int64     // max_call_bytes
	declared int64     // the app's Content-Length; -1 if none

	off    int   // of head, passed on
	n      int64 // bytes passed on
	done   bool  // the whole body has passed
	digest string
	srcErr error // the app's body broke, or grew over max
	// trailer, if not nil, gets the count of what passed as
	// X-Delta-Body-Passed when the body ends whole, before EOF is
	// returned (the request's trailer).
	trailer http.Header
	// flow: a flowing call's body (a gRPC request, docs/protocol.md
	// §1c), passed on from its first byte as the app sends it, with no
	// idle limit (a stream's silence is its app's), while its answer
	// comes (h1.Duplex: read on another goroutine, hence mu).
	flow bool
	mu   sync.Mutex // off, n, done, srcErr, while a flowing body passes
}

// flowingBody is a flowing call's body (callBody.flow): nothing of it is
// read before the call leaves. The door's limit on a request's time is
// lifted for it: a stream lives as long as its app keeps it.
func flowingBody(w http.ResponseWriter, r *http.Request, max int64) *callBody {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return &callBody{src: r.Body, max: max, declared: r.ContentLength, flow: true}
}

// failed is why the app's body broke, or grew over max; nil if it did not.
func (b *callBody) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srcErr
}

// untouched reports whether nothing of the body was passed on (a whole
// one is read again from its start), so that it may be sent once more.
// A flowing body reads nothing ahead: its count says.
func (b *callBody) untouched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.whole || b.n == 0
}

// errTooLarge is the cause when a body is over max_call_bytes.
var errTooLarge = errors.New("the body is over the limit")

// readCallBody reads the head of r's body: up to proto.InMemoryBody bytes
// and one more, to know whether that is all.
func readCallBody(body io.Reader, declared int64, method, app, pathQuery string, max int64) (*callBody, error) {
	b := &callBody{src: body, max: max, declared: declared}
	limit := int64(proto.InMemoryBody)
	if declared >= 0 && declared <= limit {
		limit = declared
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(limit+1, proto.InMemoryBody+1)))
	n, err := io.Copy(buf, io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("could not read the request body from the app after %d bytes (%w)", n, err)
	}
	b.head = buf.Bytes()
	if n > max {
		return nil, fmt.Errorf("%w of %d bytes for a call (max_call_bytes)", errTooLarge, max)
	}
	if n <= limit && (declared < 0 || n == declared) {
		// Ended within the head (or exactly at the length declared).
		b.whole, b.done, b.n = true, true, n
		b.digest = proto.Digest(method, app, pathQuery, b.head)
	}
	return b, nil
}

// Size is the body's size once it has passed (or is whole); -1 before.
func (b *callBody) Size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		return -1
	}
	return b.n
}

// Digest is the call's digest: a whole body's from the start, a streamed
// one's once the owner said it (learned); "" before.
func (b *callBody) Digest() string { return b.digest }

// learned takes the digest the owner said in its reply to a streamed
// body that passed whole (proto.HeaderDigest), and says whether it is new:
// "" or anything not written as a digest is not taken.
func (b *callBody) learned(said string) bool {
	if b.flow {
		return false // its digest is not said: its answer begins before its end
	}
	if b.whole || !b.done || b.digest != "" || !proto.IsDigest(said) {
		return false
	}
	b.digest = said
	return true
}

// Read passes the body on: the head, then the rest of the app's body.
func (b *callBody) Read(p []byte) (int, error) {
	if b.whole {
		if b.off >= len(b.head) {
			return 0, io.EOF
		}
		n := copy(p, b.head[b.off:])
		b.off += n
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, io.EOF
	}
	if b.srcErr != nil {
		return 0, b.srcErr
	}
	if b.off < len(b.head) {
		n := copy(p, b.head[b.off:])
		b.off += n
		b.n += int64(n)
		return n, nil
	}
	b.mu.Unlock() // not held while the app's body is waited for
	n, err := b.src.Read(p)
	b.mu.Lock()
	if n > 0 {
		b.n += int64(n)
		if b.n > b.max {
			b.srcErr = fmt.Errorf("%w of %d bytes for a call (max_call_bytes); the upload was cut", errTooLarge, b.max)
			return 0, b.srcErr
		}
	}
	switch {
	case err == io.EOF:
		if b.declared >= 0 && b.n != b.declared {
			b.srcErr = fmt.Errorf("the app's body ended after %d of the %d bytes its Content-Length announced; the upload was cut", b.n, b.declared)
			return n, b.srcErr
		}
		b.done = true
		if b.trailer != nil {
			b.trailer.Set(proto.HeaderBodyPassed, strconv.FormatInt(b.n, 10))
		}
		return n, io.EOF
	case err != nil:
		b.srcErr = fmt.Errorf("the app's body broke off after %d bytes (%v); the upload was cut", b.n, err)
		return n, b.srcErr
	}
	return n, nil
}

// drainFor bounds how long the rest of an app's body is taken in vain.
const drainFor = 10 * time.Second

// drain reads and drops what is left of the app's body when it did not
// all go (within drainFor, and up to the call's limit): an HTTP client
// that is still writing when its server answers and closes gets a reset
// instead of the answer.
func (b *callBody) drain(w http.ResponseWriter, r *http.Request) {
	if b.flow {
		return // its writer reads it, and endFlow ends it
	}
	if b.whole || b.done || b.srcErr != nil {
		return
	}
	// The door's deadline, not the body's idle one, bounds this.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(drainFor))
	io.Copy(io.Discard, io.LimitReader(r.Body, b.max))
}
