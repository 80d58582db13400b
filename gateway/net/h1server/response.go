package h1server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The answer to a request served here: the writer a handler gets. It is
// net/http's response and chunkWriter (server.go, Go 1.26) cut to what a
// request served here can be, an HTTP/1.1 request without a body, and
// kept line for line where it frames the answer: the same buffer before
// chunking (2,048 bytes), the same Content-Length, Content-Type sniffing,
// Date, Connection and Transfer-Encoding decisions, the same trailers and
// 1xx heads. framing_test.go holds it to net/http byte for byte.

// bufferBeforeChunking is net/http's bufferBeforeChunkingSize: an answer
// whose handler ends within it is sent with a Content-Length.
const bufferBeforeChunking = 2048

type response struct {
	c   *conn
	req *http.Request

	handlerHeader http.Header // what the handler gets, and may keep changing
	snapHeader    http.Header // the header as it was at WriteHeader, if the handler touched it since
	calledHeader  bool
	wroteHeader   bool // a non-1xx head has been (logically) written
	status        int
	contentLength int64 // declared, or -1
	written       int64
	wantsClose    bool
	handlerDone   bool

	// closeAfterReply: the connection ends with this answer.
	closeAfterReply bool

	w  *bufio.Writer // the buffer before chunking, over cw
	cw chunkWriter

	trailers []string // declared with the Trailer header

	dateBuf   [len(http.TimeFormat)]byte
	clenBuf   [10]byte
	statusBuf [3]byte
}

type chunkWriter struct {
	res         *response
	wroteHeader bool // on the wire (the connection's buffer)
	chunking    bool
}

var crlf = []byte("\r\n")

func (w *response) Header() http.Header {
	if w.snapHeader == nil && w.wroteHeader && !w.cw.wroteHeader {
		w.snapHeader = w.handlerHeader.Clone()
	}
	w.calledHeader = true
	return w.handlerHeader
}

func (w *response) logf(format string, args ...any) { w.c.s.logf(format, args...) }

func (w *response) WriteHeader(code int) {
	if w.c.hijacked {
		w.logf("http: response.WriteHeader on hijacked connection")
		return
	}
	if w.wroteHeader {
		w.logf("http: superfluous response.WriteHeader call (status %d)", code)
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	// An interim head is written at once; the final one may follow.
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		bw := w.c.bw
		writeStatusLine(bw, code, w.statusBuf[:])
		w.handlerHeader.WriteSubset(bw, excludedHeadersNoBody)
		bw.Write(crlf)
		w.c.noteWriteErr(bw.Flush())
		return
	}
	w.wroteHeader = true
	w.status = code
	if w.calledHeader && w.snapHeader == nil {
		w.snapHeader = w.handlerHeader.Clone()
	}
	if cl := w.handlerHeader.Get("Content-Length"); cl != "" {
		v, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.logf("http: invalid Content-Length of %q", cl)
			w.handlerHeader.Del("Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) { return w.write(len(p), p, "") }

// WriteString is Write of a string, buffered as net/http buffers it (in
// pieces of the buffer's size, where Write of a big slice goes on whole).
func (w *response) WriteString(s string) (int, error) { return w.write(len(s), nil, s) }

// write is net/http's response.write: either p or s is the data.
func (w *response) write(n int, p []byte, s string) (int, error) {
	if w.c.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(n)
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if p != nil {
		return w.w.Write(p)
	}
	return w.w.WriteString(s)
}

// FlushError writes what is buffered to the connection (the head first,
// if not yet): http.ResponseController's Flush.
func (w *response) FlushError() error {
	if w.c.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	err := w.w.Flush()
	if !w.cw.wroteHeader {
		w.cw.writeHeader(nil)
	}
	if e2 := w.c.bw.Flush(); err == nil {
		err = e2
	}
	w.c.noteWriteErr(err)
	return err
}

func (w *response) Flush() { w.FlushError() }

// Hijack takes the connection from the server, as net/http's: what was
// written is flushed, deadlines are lifted, and a byte the hang-up watch
// read is kept in the reader returned.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if c.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader {
		w.w.Flush()
		if !w.cw.wroteHeader {
			w.cw.writeHeader(nil)
		}
		c.bw.Flush()
	}
	if c.armed {
		c.stopWatch()
	}
	c.hijacked = true
	c.rwc.SetDeadline(time.Time{})
	if c.cr.hasByte {
		if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
			return nil, nil, fmt.Errorf("unexpected Peek failure reading buffered byte: %v", err)
		}
	}
	c.s.forget(c)
	c.s.setState(c.rwc, http.StateHijacked)
	return c.rwc, bufio.NewReadWriter(c.br, bufio.NewWriter(c.rwc)), nil
}

// SetReadDeadline and SetWriteDeadline are http.ResponseController's.
//
// The handler runs while the hang-up watch may start (its timer's
// goroutine), which sets the read deadline and idleSet too: both are
// changed under the watch's lock here as there (issue 65: a data race
// that only a loaded machine showed).
func (w *response) SetReadDeadline(t time.Time) error {
	c := w.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.idleSet = false
	return c.rwc.SetReadDeadline(t)
}
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

// EnableFullDuplex is http.ResponseController's: a request served here
// has no body to read while answering, so there is nothing to change.
func (w *response) EnableFullDuplex() error { return nil }

// finish ends the answer once the handler has returned: the head if not
// yet written, what is buffered, the last chunk and the trailers.
func (w *response) finish() {
	w.handlerDone = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.w.Flush()
	w.cw.close()
	w.c.noteWriteErr(w.c.bw.Flush())
}

// reusable reports whether the connection may carry another request.
func (w *response) reusable() bool {
	if w.closeAfterReply {
		return false
	}
	if w.req.Method != "HEAD" && w.contentLength != -1 && bodyAllowedForStatus(w.status) && w.contentLength != w.written {
		return false // short of its Content-Length: the client is out of step
	}
	return w.c.werr == nil
}

func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.handlerHeader {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = make(http.Header)
		}
		for _, v := range w.handlerHeader[k] {
			t.Add(k, v)
		}
	}
	return t
}

func (w *response) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if !httpguts.ValidTrailerHeader(k) {
		return
	}
	w.trailers = append(w.trailers, k)
}

func (cw *chunkWriter) Write(p []byte) (n int, err error) {
	if !cw.wroteHeader {
		cw.writeHeader(p)
	}
	if cw.res.req.Method == "HEAD" {
		return len(p), nil
	}
	bw := cw.res.c.bw
	if cw.chunking {
		var hex [16]byte
		bw.Write(strconv.AppendInt(hex[:0], int64(len(p)), 16))
		_, err = bw.Write(crlf)
		if err != nil {
			cw.res.c.fail(err)
			return
		}
	}
	n, err = bw.Write(p)
	if cw.chunking && err == nil {
		_, err = bw.Write(crlf)
	}
	if err != nil {
		cw.res.c.fail(err)
	}
	return
}

func (cw *chunkWriter) close() {
	if !cw.wroteHeader {
		cw.writeHeader(nil)
	}
	if cw.chunking {
		bw := cw.res.c.bw
		bw.WriteString("0\r\n")
		if trailers := cw.res.finalTrailers(); trailers != nil {
			trailers.Write(bw)
		}
		bw.WriteString("\r\n")
	}
}

// extraHeader is what writeHeader adds to the handler's header.
type extraHeader struct {
	contentType      string
	connection       string
	transferEncoding string
	date             []byte
	contentLength    []byte
}

func (h extraHeader) write(w *bufio.Writer) {
	if h.date != nil {
		w.WriteString("Date: ")
		w.Write(h.date)
		w.Write(crlf)
	}
	if h.contentLength != nil {
		w.WriteString("Content-Length: ")
		w.Write(h.contentLength)
		w.Write(crlf)
	}
	for i, v := range []string{h.contentType, h.connection, h.transferEncoding} {
		if v != "" {
			w.WriteString(extraHeaderKeys[i])
			w.WriteString(": ")
			w.WriteString(v)
			w.Write(crlf)
		}
	}
}

var extraHeaderKeys = []string{"Content-Type", "Connection", "Transfer-Encoding"}

// writeHeader is net/http's chunkWriter.writeHeader for an HTTP/1.1
// request without a body: p is the start of the body, sniffed for a
// Content-Type and, once the handler is done, measured for a
// Content-Length.
func (cw *chunkWriter) writeHeader(p []byte) {
	if cw.wroteHeader {
		return
	}
	cw.wroteHeader = true
	w := cw.res
	keepAlivesEnabled := !w.c.s.shutting.Load()
	isHEAD := w.req.Method == "HEAD"

	header := w.snapHeader
	owned := header != nil
	if !owned {
		header = w.handlerHeader
	}
	var excludeHeader map[string]bool
	delHeader := func(key string) {
		if owned {
			header.Del(key)
			return
		}
		if _, ok := header[key]; !ok {
			return
		}
		if excludeHeader == nil {
			excludeHeader = make(map[string]bool)
		}
		excludeHeader[key] = true
	}
	var setHeader extraHeader

	// The fake "Trailer:name" keys are not written (http.TrailerPrefix).
	trailers := false
	for k := range w.snapHeader {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			if excludeHeader == nil {
				excludeHeader = make(map[string]bool)
			}
			excludeHeader[k] = true
			trailers = true
		}
	}
	for _, v := range w.snapHeader["Trailer"] {
		trailers = true
		foreachHeaderElement(v, w.declareTrailer)
	}

	te := headerGet(header, "Transfer-Encoding")
	hasTE := te != ""

	if w.handlerDone && !trailers && !hasTE && bodyAllowedForStatus(w.status) && !headerHas(header, "Content-Length") && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		setHeader.contentLength = strconv.AppendInt(w.clenBuf[:0], int64(len(p)), 10)
	}

	hasCL := w.contentLength != -1
	if w.wantsClose {
		w.closeAfterReply = true
	}
	if headerGet(header, "Connection") == "close" || !keepAlivesEnabled {
		w.closeAfterReply = true
	}

	code := w.status
	if bodyAllowedForStatus(code) {
		_, haveType := header["Content-Type"]
		hasCE := len(header.Get("Content-Encoding")) > 0
		if !hasCE && !haveType && !hasTE && len(p) > 0 {
			setHeader.contentType = http.DetectContentType(p)
		}
	} else {
		for _, k := range suppressedHeaders(code) {
			delHeader(k)
		}
	}

	if !headerHas(header, "Date") {
		setHeader.date = time.Now().UTC().AppendFormat(w.dateBuf[:0], http.TimeFormat)
	}

	if hasCL && hasTE && te != "identity" {
		w.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		delHeader("Content-Length")
		hasCL = false
	}

	switch {
	case isHEAD || !bodyAllowedForStatus(code) || code == http.StatusNoContent:
		delHeader("Transfer-Encoding")
	case hasCL:
		delHeader("Transfer-Encoding")
	case hasTE && te == "identity":
		cw.chunking = false
		w.closeAfterReply = true
		delHeader("Transfer-Encoding")
	default:
		cw.chunking = true
		setHeader.transferEncoding = "chunked"
		if hasTE && te == "chunked" {
			delHeader("Transfer-Encoding")
		}
	}
	if cw.chunking {
		delHeader("Content-Length")
	}

	if w.closeAfterReply && (!keepAlivesEnabled || !hasToken(headerGet(w.snapHeader, "Connection"), "close")) && !isProtocolSwitchResponse(code, header) {
		delHeader("Connection")
		setHeader.connection = "close"
	}

	bw := w.c.bw
	writeStatusLine(bw, code, w.statusBuf[:])
	w.snapHeader.WriteSubset(bw, excludeHeader)
	setHeader.write(bw)
	bw.Write(crlf)
}

// writeStatusLine writes an HTTP/1.1 status line, as net/http does.
func writeStatusLine(bw *bufio.Writer, code int, scratch []byte) {
	bw.WriteString("HTTP/1.1 ")
	if text := http.StatusText(code); text != "" {
		bw.Write(strconv.AppendInt(scratch[:0], int64(code), 10))
		bw.WriteByte(' ')
		bw.WriteString(text)
		bw.WriteString("\r\n")
	} else {
		fmt.Fprintf(bw, "%03d status code %d\r\n", code, code)
	}
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == 204, status == 304:
		return false
	}
	return true
}

var (
	suppressedHeaders304    = []string{"Content-Type", "Content-Length", "Transfer-Encoding"}
	suppressedHeadersNoBody = []string{"Content-Length", "Transfer-Encoding"}
	excludedHeadersNoBody   = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}
)

func suppressedHeaders(status int) []string {
	switch {
	case status == 304:
		return suppressedHeaders304
	case !bodyAllowedForStatus(status):
		return suppressedHeadersNoBody
	}
	return nil
}

func isProtocolSwitchResponse(code int, h http.Header) bool {
	return code == http.StatusSwitchingProtocols && h.Get("Upgrade") != "" &&
		httpguts.HeaderValuesContainsToken(h["Connection"], "Upgrade")
}

// headerGet and headerHas read a canonical key without canonicalizing it
// again, as net/http's own Header.get and has.
func headerGet(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func headerHas(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

// hasToken reports whether token (lower case) appears in v, ASCII
// case-insensitively, between spaces, commas or tabs: net/http's hasToken.
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	boundary := func(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !boundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !boundary(v[end]) {
			continue
		}
		if strings.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func foreachHeaderElement(v string, fn func(string)) {
	v = textproto.TrimString(v)
	if v == "" {
		return
	}
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}
