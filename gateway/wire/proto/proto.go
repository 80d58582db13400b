// Package proto is Delta's wire vocabulary: the outcomes of DESIGN §2, the
// peer gateway's own error names, the X-Delta-* headers, the checks on
// request ids and timeouts, the call digest, and the JSON error body.
//
// Both sides of a hop use it, so that what the caller's Delta sends and what
// the owner's Delta checks are one definition.
package proto

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// PeerError names a reply the owner's Delta makes itself on the peer API.
// It travels in X-Delta-Outcome and in the JSON body's "error".
type PeerError string

// The peer gateway's own replies (DESIGN §2, §4).
const (
	PeerAnswered      PeerError = "answered"          // the app's answer, passed through
	PeerBadRequest    PeerError = "bad_request"       // 400: refused before anything ran
	PeerUnauthorized  PeerError = "unauthorized"      // 401 at the door: renew the ticket
	PeerForbidden     PeerError = "forbidden"         // 403 at the door
	PeerAppNotFound   PeerError = "app_not_found"     // 404: no such app registered there
	PeerAppDown       PeerError = "app_unavailable"   // 503: the app refused the connection
	PeerOwnerFailed   PeerError = "owner_failed"      // 503: the owner's Delta failed (journal, registry, spool) before its app; nothing was carried out
	PeerFenced        PeerError = "fenced"            // 409: asked about before it arrived
	PeerInProgress    PeerError = "in_progress"       // 409: the same call is running
	PeerReused        PeerError = "request_id_reused" // 422: same id, other request
	PeerUnknown       PeerError = "outcome_unknown"   // 502: the app's answer did not come
	PeerTooLarge      PeerError = "too_large"         // 413: body over the limit
	PeerTimeout       PeerError = "timeout"           // 504: a read's app did not answer in time
	PeerNotDone       PeerError = "not_carried_out"   // 409: this call was not carried out
	PeerAppUnknown    PeerError = "app_unknown"       // 409: the app's connection broke mid-call
	PeerInterrupted   PeerError = "interrupted"       // 409: the owner restarted mid-call
	PeerAppBroke      PeerError = "app_error"         // 502: a read's app broke its answer before its head
	PeerBusy          PeerError = "door_busy"         // 503: over the door's connections from one source; nothing was carried out
	PeerAnswerExpired PeerError = "answer_expired"    // 409: answered; the answer is no longer kept
	PeerTooManyFences PeerError = "too_many_fences"   // 429: asked about too many unseen ids; ask later
	PeerNoRoom        PeerError = "no_room"           // 507: no room for the call's body; nothing was carried out
	PeerBodyCut       PeerError = "body_cut"          // 400: the call's body did not arrive whole; it was not forwarded
)

// Headers only the two Deltas speak to each other (the ones an app sees
// are localapi's).
const (
	HeaderDigest = "X-Delta-Digest"
	// HeaderBodyLength is the size of a call's body that streams between
	// the Deltas (chunked, with HeaderBodyPassed as its trailer), when the
	// app gave one: the owner refuses a body it has no room for before it
	// arrives.
	HeaderBodyLength = "X-Delta-Body-Length"
	// HeaderBodyPassed is the trailer of a call's body that streams
	// between the Deltas: the bytes the caller's Delta read from its app,
	// sent once the app's body ended whole. The caller does not sum a
	// streamed body (one hash pass, the owner's): the owner sums it as it
	// spools, forwards it only when this trailer came and names what
	// arrived, and says the digest in its reply (HeaderDigest), which the
	// caller records.
	HeaderBodyPassed = "X-Delta-Body-Passed"
	// HeaderFlow marks a flowing call (a gRPC request, docs/protocol.md
	// §1c): its body streams as HeaderBodyPassed's does, and its owner
	// passes it to its app as it arrives, instead of whole, ending it for
	// the app only when the caller's count came and names what arrived;
	// a body cut short reaches the app as a reset stream. Its answer may
	// begin before its request ends. Its value is "messages".
	HeaderFlow = "X-Delta-Flow"
	// HeaderHost is the Host the calling app's client used (the local
	// API's, or a forward's), from the caller's Delta to the owner's; the
	// owner app gets it as Host, with X-Forwarded-Host and Forwarded
	// (DESIGN §2b). HeaderPrefix is the path prefix the client used
	// before the app's own paths (/v1/peers/PEER/APP on the local API,
	// none through a forward): the owner app gets it as
	// X-Forwarded-Prefix.
	HeaderHost   = "X-Delta-Host"
	HeaderPrefix = "X-Delta-Prefix"
	// HeaderAuthorization is the calling app's own Authorization header
	// (through a forward that asks for no token), from the caller's Delta
	// to the owner's, which gives it to its app as Authorization.
	HeaderAuthorization = "X-Delta-Authorization"
	// HeaderTimeoutDefault goes from the caller's Delta to the owner's
	// with a request whose app said no X-Delta-Timeout (nor its forward):
	// the wait for the answer's head when the owner's app has no timeout
	// of its own either, in X-Delta-Timeout's form, or "none" for no
	// limit (Wait).
	HeaderTimeoutDefault = "X-Delta-Timeout-Default"
)

// Paths of the peer API (DESIGN §4), shared by the owner's routes and the
// peer client's requests.
const (
	PathPing    = "/delta/v1/ping"
	PathHello   = "/delta/v1/hello"
	PathTickets = "/delta/v1/tickets"
	// PathApps is followed by the app's name and the path with query.
	PathApps = "/delta/v1/apps/"
	// PathCalls is followed by a request id.
	PathCalls = "/delta/v1/calls/"
	// PathAppList lists the names of the apps registered there
	// (AppListJSON).
	PathAppList = "/delta/v1/app-list"
	// PathPair asks the owner to pair with the caller (POST PairAskJSON,
	// answered PairReplyJSON): static mode with IDs, the one path a
	// computer that is not paired may reach.
	PathPair = "/delta/v1/pair"
)

// PairAskJSON is a computer's request to pair: the name it gives itself
// and its peer API's port (the address is the connection's own).
type PairAskJSON struct {
	Name string `json:"name"`
	Port int    `json:"port"`
}

// PairReplyJSON answers a PairAskJSON: State is "paired" when the owner
// has paired the caller already, "asked" when a person there is to say.
type PairReplyJSON struct {
	State string `json:"state"`
}

// Limits shared by both sides of a hop.
const (
	// DefaultMaxCallBytes is the largest request body a call may carry
	// unless config.json's max_call_bytes says otherwise (413 above).
	DefaultMaxCallBytes = 16 << 30
	// InMemoryBody is the largest call body held in memory whole; a
	// larger one streams (DESIGN §2a).
	InMemoryBody = 1 << 20
	// MaxQueryAnswer bounds the JSON answer of an owner's GET
	// /delta/v1/calls/{id} (it holds a stored answer of up to
	// MaxStoredAnswer, in base64).
	MaxQueryAnswer = 4 << 20
	// MaxStoredAnswer is the largest answer body kept in a journal; a larger
	// one is kept as its digest only.
	MaxStoredAnswer = 1 << 20
	// BodyIdle ends a call's body, in either direction, that makes no
	// progress for this long (DESIGN §2a).
	BodyIdle = 30 * time.Second
	// DefaultTimeout is the local API's wait for an answer's head when
	// the app gives no X-Delta-Timeout and the owner's app has no timeout
	// of its own (Wait).
	DefaultTimeout = 30 * time.Second
	// MaxTimeout is the largest X-Delta-Timeout.
	MaxTimeout = 600 * time.Second
)

// The forms of a request id, a timeout and a name, checked on every read
// and call: as loops, not regexps (which cost 1.5 % of a small read's CPU
// in the two Deltas). TestChecksAsRegexps holds each to its regexp:
//
//	request id  ^[A-Za-z0-9._~:-]{1,128}$
//	timeout     ^[0-9]{1,3}(\.[0-9]{1,3})?$
//	name        ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func validRequestID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != '~' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// digits reports whether s is 1 to 3 ASCII digits.
func digits(s string) bool {
	if len(s) < 1 || len(s) > 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validTimeout(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return digits(whole) && (!dot || digits(frac))
}

func validName(s string) bool {
	if len(s) < 1 || len(s) > 63 || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// CheckRequestID reports why id is not a valid X-Delta-Request-Id, or nil.
func CheckRequestID(id string) error {
	if len(id) > 128 {
		return fmt.Errorf("X-Delta-Request-Id is %d characters long; at most 128 are allowed", len(id))
	}
	if !validRequestID(id) {
		return fmt.Errorf("X-Delta-Request-Id %q has a character outside A-Z a-z 0-9 . _ ~ : - (or is empty)", id)
	}
	if strings.Trim(id, ".") == "" {
		return fmt.Errorf("X-Delta-Request-Id %q is only dots", id)
	}
	return nil
}

// ParseTimeout parses an X-Delta-Timeout value. Empty means DefaultTimeout.
func ParseTimeout(v string) (time.Duration, error) {
	if v == "" {
		return DefaultTimeout, nil
	}
	if !validTimeout(v) {
		return 0, fmt.Errorf("X-Delta-Timeout %q is not seconds written as digits with at most 3 decimals (for example 30 or 2.5)", v)
	}
	// Whole seconds and milliseconds are read as integers: through a float,
	// 130.915 s became 130.914999999 s and wrote back as 130.914.
	whole, frac, _ := strings.Cut(v, ".")
	sec, err := strconv.Atoi(whole)
	if err != nil {
		return 0, fmt.Errorf("X-Delta-Timeout %q: %w", v, err)
	}
	ms := 0
	if frac != "" {
		ms, err = strconv.Atoi((frac + "00")[:3])
		if err != nil {
			return 0, fmt.Errorf("X-Delta-Timeout %q: %w", v, err)
		}
	}
	d := time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond
	if d <= 0 {
		return 0, fmt.Errorf("X-Delta-Timeout %q must be more than 0 seconds", v)
	}
	if d > MaxTimeout {
		return 0, fmt.Errorf("X-Delta-Timeout %q is over the limit of 600 seconds", v)
	}
	return d, nil
}

// NoLimit is how a timeout says "none" where a number is kept: an owner
// app registered with no limit (delta apps add --timeout none).
const NoLimit time.Duration = -1

// ParseLimit parses a timeout a person gives (delta apps add --timeout,
// delta forward --timeout): seconds as X-Delta-Timeout writes them, or
// "none" (NoLimit). Empty is 0: none given.
func ParseLimit(v string) (time.Duration, error) {
	switch v {
	case "":
		return 0, nil
	case "none":
		return NoLimit, nil
	}
	d, err := ParseTimeout(v)
	if err != nil {
		return 0, fmt.Errorf("timeout %q is neither seconds (as 45 or 2.5, at most 600) nor none (%v)", v,
			strings.TrimPrefix(err.Error(), fmt.Sprintf("X-Delta-Timeout %q ", v)))
	}
	return d, nil
}

// FormatLimit writes a timeout as ParseLimit reads it: "" for 0, "none"
// for NoLimit.
func FormatLimit(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < 0:
		return "none"
	}
	return FormatTimeout(d)
}

// Wait is how long an owner's app may take before its answer's head
// (DESIGN §2c): the timeout the request says, else the owner app's own,
// else Else. Once the head has been passed on, no limit of Delta's own
// bounds the answer: a quiet body lives as long as the app and its client
// keep it.
type Wait struct {
	// Said is the timeout the request carries: its client's
	// X-Delta-Timeout, or the forward's own (delta forward --timeout).
	// 0: none was said.
	Said time.Duration
	// Else is the wait when none was said and the owner's app has no
	// timeout of its own: DefaultTimeout on the local API; 0, no limit,
	// through a forward (as Caddy's reverse_proxy has none).
	Else time.Duration
}

// Set writes w for the owner's Delta: X-Delta-Timeout when one was said,
// else X-Delta-Timeout-Default.
func (w Wait) Set(h http.Header) {
	if w.Said > 0 {
		h.Set(localapi.HeaderTimeout, FormatTimeout(w.Said))
		return
	}
	h.Del(localapi.HeaderTimeout)
	if w.Else > 0 {
		h.Set(HeaderTimeoutDefault, FormatTimeout(w.Else))
	} else {
		h.Set(HeaderTimeoutDefault, "none")
	}
}

// ParseWait reads what Set wrote. A request with neither header (from a
// Delta older than DESIGN §2c) waits DefaultTimeout, as it asked then.
func ParseWait(h http.Header) (Wait, error) {
	var w Wait
	var err error
	if v := h.Get(localapi.HeaderTimeout); v != "" {
		w.Said, err = ParseTimeout(v)
		return w, err
	}
	switch v := h.Get(HeaderTimeoutDefault); v {
	case "":
		w.Else = DefaultTimeout
	case "none":
	default:
		if w.Else, err = ParseTimeout(v); err != nil {
			return w, fmt.Errorf("%s: %w", HeaderTimeoutDefault, err)
		}
	}
	return w, nil
}

// For is the wait for an owner app whose own timeout is app (0: it has
// none; NoLimit: it has no limit): the one said, else the app's, else
// Else. 0 is no limit.
func (w Wait) For(app time.Duration) time.Duration {
	switch {
	case w.Said > 0:
		return w.Said
	case app < 0:
		return 0
	case app > 0:
		return app
	}
	return w.Else
}

// FormatTimeout writes d as an X-Delta-Timeout value (millisecond precision,
// at least 0.001).
func FormatTimeout(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	s := strconv.FormatInt(ms/1000, 10)
	if rest := ms % 1000; rest != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", rest), "0")
	}
	return s
}

// IsLoopbackHost reports whether host (an IP address or a name, without a
// port) is this computer's loopback: "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckName reports why s is not a valid peer or app name, or nil. what is
// "peer" or "app", for the message.
func CheckName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("%s name %q must be 1-63 characters of A-Z a-z 0-9 . _ - starting with a letter or digit", what, s)
	}
	return nil
}

// IsCall reports whether method is a call (sent at most once): every
// method that is not a read, known or not (POST, PUT, PATCH, DELETE,
// MKCOL, MOVE, …), except those Delta refuses (Refused).
func IsCall(method string) bool {
	return !IsRead(method) && method != http.MethodConnect && method != http.MethodTrace
}

// IsRead reports whether method is a read: a method whose definition makes
// it safe (RFC 9110 §9.2.1): GET, HEAD, OPTIONS, WebDAV's PROPFIND (RFC
// 4918 §9.1), REPORT (RFC 3253 §3.6), SEARCH (RFC 5323) and QUERY (the
// HTTP QUERY method draft) (DESIGN §2a). Only GET and HEAD are cached.
// OPTIONS * is refused (Refused); TRACE is safe but never carried.
func IsRead(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "PROPFIND", "REPORT", "SEARCH", "QUERY":
		return true
	}
	return false
}

// ReadMayCarryBody reports whether a read of method may carry a body to
// its owner: the safe methods whose request says what to read (PROPFIND's
// properties, REPORT's and SEARCH's and QUERY's query), and OPTIONS. A
// body on GET or HEAD has no defined meaning (RFC 9110 §9.3.1) and is
// refused.
func ReadMayCarryBody(method string) bool {
	return IsRead(method) && method != http.MethodGet && method != http.MethodHead
}

// MaxReadBody bounds the body a read may carry (a PROPFIND's properties, a
// REPORT's query): it is held in memory so that the read can be sent
// again on a fresh road.
const MaxReadBody = 1 << 20

// Refused says why Delta refuses a request of method with the
// request-target requestURI itself, and with which status (nothing sent),
// or "": CONNECT and TRACE, which Delta does not carry (405), OPTIONS *,
// which asks about the server rather than a resource (405), * with any
// other method, which HTTP does not allow, and a target without a path
// ("a:0"), which no app's route matches (400).
func Refused(method, requestURI string) (status int, why string) {
	switch {
	case method == http.MethodConnect:
		return http.StatusMethodNotAllowed, "CONNECT asks for a tunnel, which Delta does not open (a WebSocket or another upgrade goes as a session: GET with Connection: upgrade)"
	case method == http.MethodTrace:
		return http.StatusMethodNotAllowed, "TRACE is not carried: it would echo this computer's headers back"
	case method == http.MethodOptions && requestURI == "*":
		return http.StatusMethodNotAllowed, "OPTIONS * asks about Delta's server, not about an app; OPTIONS on a path is carried as a read"
	case requestURI == "*":
		return http.StatusBadRequest, method + " * names no path, so no app (HTTP allows * only with OPTIONS)"
	case !hasPath(requestURI):
		return http.StatusBadRequest, fmt.Sprintf("the request-target %q names no path (it must start with /, or be a URL with one)", requestURI)
	}
	return 0, ""
}

// hasPath reports whether a request-target has a path that starts with
// "/": origin-form ("/x"), or absolute-form with one ("http://h/x").
func hasPath(requestURI string) bool {
	u, err := url.ParseRequestURI(requestURI)
	return err == nil && strings.HasPrefix(u.Path, "/")
}

// CheckStatus says why an answer's status code is not one an HTTP server
// may send (100-599: RFC 9110 §15; Go's server refuses to write others),
// or nil. Go's http.ReadResponse takes any three digits, "000" too: such
// an answer is a broken one, the app's fault (DESIGN §2b), never written
// on.
func CheckStatus(code int) error {
	if code < 100 || code > 599 {
		return fmt.Errorf("the answer's status %03d is not an HTTP status (100-599)", code)
	}
	return nil
}

// OpensSession reports whether a request of method with header h and a
// body of contentLength (-1: unknown) opens a session (DESIGN §2a): only a
// bodiless read that asks for an Upgrade to something other than h2c
// does. A request with a body, or a call, asking for one is carried as a
// call (its Upgrade, hop-by-hop, dropped): at most once, journaled, its
// body whole, never as session bytes. Upgrade: h2c (curl --http2 on
// http://) is an offer the next hop may ignore, and is dropped.
func OpensSession(method string, h http.Header, contentLength int64) bool {
	if !IsRead(method) || contentLength != 0 || !IsUpgrade(h) {
		return false
	}
	for _, v := range h.Values("Upgrade") {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.EqualFold(p, "h2c") {
				return true
			}
		}
	}
	return false
}

// IsUpgrade reports whether h asks for a session: Connection lists
// "upgrade" and Upgrade names a protocol (DESIGN §2a).
func IsUpgrade(h http.Header) bool {
	return h.Get("Upgrade") != "" && HasToken(h.Values("Connection"), "upgrade")
}

// HasToken reports whether the comma-separated header values vs list tok,
// in any case (Connection: keep-alive, Upgrade; Accept-Ranges: bytes).
func HasToken(vs []string, tok string) bool {
	for _, v := range vs {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), tok) {
				return true
			}
		}
	}
	return false
}

// Digest is the SHA-256 of a call, hex-encoded. The encoding, fixed by this
// function and documented in docs/protocol.md, is
//
//	"delta-digest/1" NUL method NUL app NUL path-with-query NUL body
//
// Method, app and path never hold NUL (they are checked before), and the
// body comes last, so the encoding is unambiguous.
func Digest(method, app, pathQuery string, body []byte) string {
	h := NewDigest(method, app, pathQuery)
	h.Write(body)
	return DigestOf(h)
}

// NewDigest starts the digest of a call whose body is streamed: write the
// body to it as it passes, then DigestOf.
func NewDigest(method, app, pathQuery string) hash.Hash {
	h := sha256.New()
	h.Write([]byte("delta-digest/1\x00"))
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(app))
	h.Write([]byte{0})
	h.Write([]byte(pathQuery))
	h.Write([]byte{0})
	return h
}

// DigestOf is the hex digest a NewDigest has summed so far.
func DigestOf(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// IsDigest says whether s is written as a digest is: 64 lowercase hex
// digits.
func IsDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// WriteError writes one of Delta's own answers: status, X-Delta-Outcome
// (the value of b.Error) and the JSON body.
func WriteError(w http.ResponseWriter, status int, b localapi.ErrorBody) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set(localapi.HeaderOutcome, b.Error)
	if b.RequestID != "" {
		h.Set(localapi.HeaderRequestID, b.RequestID)
	}
	if b.Road != "" {
		h.Set(localapi.HeaderRoute, b.Road)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// StripDelta removes every X-Delta-* header from h, however it is spelled:
// an app behind CGI, WSGI, PHP or Rack reads "X_Delta_Caller" (and
// "x_dElTa-caller") as HTTP_X_DELTA_CALLER, the header Delta vouches for,
// so every name that folds to X-Delta-* goes.
func StripDelta(h http.Header) {
	for k := range h {
		if IsDeltaName(k) {
			delete(h, k)
		}
	}
}

// IsDeltaName reports whether header name k reads as one of Delta's own
// (X-Delta-*) once case is folded and "_" read as "-".
func IsDeltaName(k string) bool {
	const p = "x-delta-"
	if len(k) < len(p) {
		return false
	}
	for i := range len(p) {
		c := k[i] | 0x20 // ASCII lower case; '-' and '_' stay apart
		if k[i] == '_' {
			c = '-'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// Repeated names the first of names that h holds more than once, or "".
// Delta refuses such a request: of two request ids, two timeouts or two
// tickets, Delta and the app could each read another.
func Repeated(h http.Header, names ...string) string {
	for _, n := range names {
		if len(h.Values(n)) > 1 {
			return n
		}
	}
	return ""
}

// hopHeaders are removed between hops (RFC 9110 §7.6.1), with the
// credentials that belong to one hop only.
// Expect is between an app and its own Delta (DESIGN §2a): never
// forwarded. Cookie is the caller's to decide (it passes through a
// forward, never from /v1/peers/…, DESIGN §2b): see ForwardHeaders.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Authorization", "Expect",
}

// StripHop removes hop-by-hop headers (and those named in Connection),
// Authorization and every X-Delta-* header from h.
func StripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	StripDelta(h)
}

// MaxHeadBytes bounds an answer's head, its interim answers included, on
// every hop Delta reads one: 1 MiB, as net/http's servers bound a
// request's (DefaultMaxHeaderBytes), a tenth of its Transport's default
// for answers. Reading a head allocates a few times its size, so the
// bound is what a hostile one costs (BenchmarkBigHead). A longer one is
// the sender's broken answer.
const MaxHeadBytes = 1 << 20

// ErrHeadTooLarge is what reading an answer's head past MaxHeadBytes
// fails with.
var ErrHeadTooLarge = fmt.Errorf("the answer's head is over %d KiB, which Delta does not read", MaxHeadBytes>>10)

// HeadLimit bounds what is read from R while a head is read: Limit
// before it (the bytes left), Unlimit once it has been read (the body
// is bounded otherwise). It sits under a connection's bufio.Reader.
type HeadLimit struct {
	R    io.Reader
	left int64
	on   bool
}

// Read reads from R, failing with ErrHeadTooLarge past the limit.
func (h *HeadLimit) Read(p []byte) (int, error) {
	if !h.on {
		return h.R.Read(p)
	}
	if h.left <= 0 {
		return 0, ErrHeadTooLarge
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.R.Read(p)
	h.left -= int64(n)
	return n, err
}

// Limit starts a head: at most n more bytes may be read.
func (h *HeadLimit) Limit(n int64) { h.on, h.left = true, n }

// Unlimit ends it.
func (h *HeadLimit) Unlimit() { h.on = false }

// StripHopAnswer is StripHop for an answer of status: a 426 Upgrade
// Required keeps its Upgrade header, which must say what to upgrade to
// (RFC 9110 §15.5.22).
func StripHopAnswer(h http.Header, status int) {
	var up []string
	if status == http.StatusUpgradeRequired {
		up = h.Values("Upgrade")
	}
	StripHop(h)
	if len(up) > 0 {
		h["Upgrade"] = up
	}
}

// TicketScheme is the Authorization scheme of a ticket on the peer API:
// "Authorization: Delta <ticket>" (DESIGN §4).
const TicketScheme = "Delta "

// TicketAuth is the Authorization header value that presents ticket t.
func TicketAuth(t string) string { return TicketScheme + t }

// TicketFrom returns the ticket an Authorization header presents, and
// whether it is of the ticket scheme at all.
func TicketFrom(auth string) (string, bool) { return strings.CutPrefix(auth, TicketScheme) }

// UncleanPath says why a request path is not carried as it is: an empty
// segment ("//"), or a "." or ".." segment, spelled plainly or escaped
// ("%2e%2e"). Go's ServeMux would answer such a path with a redirect to
// its cleaned form, and a client that follows it resends the request
// elsewhere: another app, another peer, Delta's own API. Delta refuses
// them instead. "" means the path is clean.
func UncleanPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch {
		case i == 0 || s == "" && i == len(segs)-1:
			// before the leading slash; a trailing slash
		case s == "":
			return "the path holds an empty segment (//)"
		case s == "." || s == "..":
			return fmt.Sprintf("the path holds a %q segment", s)
		}
	}
	return ""
}

// SplitTarget reads the name at the start of an escaped path (a peer's,
// or an app's: what says which) and returns it unescaped and checked
// (CheckName), with the rest of the path exactly as written, from its
// "/" ("/" when nothing follows). A name written with percent-escapes
// ("b%65ta") is the name it spells; the path after it is never touched.
func SplitTarget(escaped, what string) (name, rest string, err error) {
	seg, rest, _ := strings.Cut(escaped, "/")
	rest = "/" + rest
	name, err = url.PathUnescape(seg)
	if err != nil {
		return "", "", fmt.Errorf("%s name %q is not a valid escaped path segment: %w", what, seg, err)
	}
	if err := CheckName(what, name); err != nil {
		return "", "", err
	}
	return name, rest, nil
}

// MaxAppName bounds X-Delta-App: a name for people (menus,
// notifications, the status page), not authenticated.
const MaxAppName = 64

// CallerApp names the app that made a request, as Delta keeps it (AppName):
// its X-Delta-App, else the product of its User-Agent ("curl", "rclone",
// "python-requests"), which is all a client given only a forward's URL
// says of itself; "" when it says neither.
func CallerApp(h http.Header) string {
	if v := h.Get(localapi.HeaderApp); v != "" {
		return AppName(v)
	}
	product, _, _ := strings.Cut(strings.TrimSpace(h.Get("User-Agent")), " ")
	product, _, _ = strings.Cut(product, "/")
	return AppName(product)
}

// AppName is X-Delta-App as Delta keeps it: at most MaxAppName
// characters of valid UTF-8 (what is shown of it is made safe to show
// where it is shown: view.Safe).
func AppName(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if r := []rune(v); len(r) > MaxAppName {
		return string(r[:MaxAppName-1]) + "…"
	}
	return v
}
