// Package readcache is Delta's read cache: a private HTTP cache (RFC 9111)
// per (peer, app, path with query, Vary), bounded in bytes and evicting the
// least recently used answer.
//
// It serves fresh answers without asking the peer and, when the peer cannot
// be reached, stored answers as stale (stale-if-error), never one marked
// no-store, no-cache or must-revalidate. A stored answer that is no longer
// fresh (or marked no-cache, or must-revalidate) and has a validator is
// revalidated: the caller asks with If-None-Match / If-Modified-Since
// (Validators), and a 304 freshens the stored answer (Freshen, RFC 9111
// §4.3.4) instead of carrying its body again.
package readcache

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Entry is one stored answer.
type Entry struct {
	Status int
	Header http.Header
	Body   []byte
	Road   string // the road that carried it

	key        string
	varyNames  []string
	stored     time.Time
	initialAge time.Duration
	lifetime   time.Duration
	staleOK    bool
}

// Age is the entry's age at now (RFC 9111 §4.2.3, simplified: the Age the
// owner sent plus the time stored here).
func (e *Entry) Age(now time.Time) time.Duration {
	return e.initialAge + now.Sub(e.stored)
}

// Fresh reports whether the entry may be served without asking at now.
func (e *Entry) Fresh(now time.Time) bool { return e.Age(now) < e.lifetime }

// StaleOK reports whether the entry may be served stale when the peer
// cannot be reached.
func (e *Entry) StaleOK() bool { return e.staleOK }

func (e *Entry) size() int64 {
	n := int64(len(e.Body) + len(e.key) + 64)
	for k, vs := range e.Header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v))
		}
	}
	return n
}

// Validators are the conditional headers that revalidate the entry
// (RFC 9111 §4.3.1): If-None-Match with its ETag, If-Modified-Since with
// its Last-Modified; nil when it has neither.
func (e *Entry) Validators() http.Header {
	var h http.Header
	if et := e.Header.Get("ETag"); et != "" {
		h = http.Header{"If-None-Match": {et}}
	}
	if lm := e.Header.Get("Last-Modified"); lm != "" {
		if _, ok := HTTPDate(lm); ok {
			if h == nil {
				h = http.Header{}
			}
			h.Set("If-Modified-Since", lm)
		}
	}
	return h
}

// Conditional reports whether an app's request is conditional or asks for
// a range itself: its own validators go to the owner as they are, and the
// answer (a 304 or a 206 of its own) is the app's, not the cache's.
func Conditional(req http.Header) bool {
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"} {
		if _, ok := req[k]; ok {
			return true
		}
	}
	return false
}

// Cache is safe for concurrent use.
type Cache struct {
	max      int64
	maxEntry int64
	now      func() time.Time

	mu    sync.Mutex
	used  int64
	lru   *list.List               // of *Entry, most recent first
	items map[string]*list.Element // variant key → element
	vary  map[string][]string      // base key → Vary field names
}

// New returns a cache of at most maxBytes; one answer may take at most a
// quarter of it (16 MiB of 64). now may be nil (time.Now).
func New(maxBytes int64, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{max: maxBytes, maxEntry: maxBytes / 4, now: now, lru: list.New(),
		items: map[string]*list.Element{}, vary: map[string][]string{}}
}

// Key makes the base key of an answer.
func Key(peer, app, pathQuery string) string {
	return peer + "\x00" + app + "\x00" + pathQuery
}

// KeyAt is Key for an answer to a request that came through one door:
// the Host and path prefix its client used (a forward's, or the local
// API's /v1/peers/PEER/APP), which the owner app may build its answer
// from (absolute links, redirects). Invalidate(Key(…)) drops it with the
// answers of every other door.
func KeyAt(peer, app, pathQuery, door string) string {
	return Key(peer, app, pathQuery) + "\x00@" + door
}

// Credentialed is base for an answer to a request that carried its
// client's own credentials (the Authorization header a client sends an app
// through a forward): found only by a request with the same credentials,
// never by one with others or none, fresh or stale (issue 63, D1). The key
// holds a SHA-256 of them, not the credentials. Invalidate(Key(…)) drops
// it with the rest.
func Credentialed(base, authorization string) string {
	sum := sha256.Sum256([]byte(authorization))
	return base + "\x00#" + hex.EncodeToString(sum[:])
}

// SharedWithCredentials reports whether an answer to a request with
// Authorization may be stored (RFC 9111 §3.5): only when the app said so,
// with public or must-revalidate. (§3.5 allows s-maxage too, which gives
// a shared cache a lifetime; this cache is a private one, which ignores
// s-maxage, §5.2.2.10, so it would store an answer it could never serve
// fresh.) Delta's cache serves every app and every client of this
// computer: even then only the same credentials find it (Credentialed).
func SharedWithCredentials(resp http.Header) bool {
	d := Directives(resp)
	for _, k := range []string{"public", "must-revalidate"} {
		if _, ok := d[k]; ok {
			return true
		}
	}
	return false
}

func variant(base string, names []string, req http.Header) string {
	var b strings.Builder
	b.WriteString(base)
	for _, n := range names {
		b.WriteString("\x00")
		b.WriteString(strings.Join(req.Values(n), ","))
	}
	return b.String()
}

// Get returns the stored answer for a request, or nil.
func (c *Cache) Get(base string, req http.Header) *Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, ok := c.vary[base]
	if !ok {
		return nil
	}
	el, ok := c.items[variant(base, names, req)]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*Entry)
}

// Directives parses a Cache-Control header into lower-case names and
// values.
func Directives(h http.Header) map[string]string {
	d := map[string]string{}
	for _, line := range h.Values("Cache-Control") {
		for part := range strings.SplitSeq(line, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			name, val, _ := strings.Cut(part, "=")
			d[strings.ToLower(strings.TrimSpace(name))] = strings.Trim(strings.TrimSpace(val), `"`)
		}
	}
	return d
}

// RequestBypasses reports whether the app's request asks not to be served
// from the cache (no-cache, max-age=0, or Pragma: no-cache).
func RequestBypasses(req http.Header) bool {
	d := Directives(req)
	_, noCache := d["no-cache"]
	return noCache || d["max-age"] == "0" || (len(d) == 0 && req.Get("Pragma") == "no-cache")
}

var storableStatus = []int{200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501}

// Put stores an answer if RFC 9111 allows a private cache to, and reports
// whether it did.
func (c *Cache) Put(base string, req http.Header, status int, resp http.Header, body []byte, road string) bool {
	a := c.Storable(status, req, resp, -1)
	if a == nil {
		return false
	}
	return c.PutAdmitted(a, base, resp, body, road)
}

// Admission is an answer Storable found may be stored, with what it read
// of the headers, so that PutAdmitted reads nothing twice.
type Admission struct {
	status     int
	req        http.Header
	varyNames  []string // sorted
	directives map[string]string
}

// Storable returns the admission of an answer with this status and these
// headers, or nil if it may not be stored, before its body is read: the
// relay keeps a copy of the body only then. contentLength is the answer's
// length, -1 if unknown. An event stream is never stored: a second read
// would get a recording instead of the events (DESIGN §2a).
func (c *Cache) Storable(status int, req, resp http.Header, contentLength int64) *Admission {
	if contentLength > c.maxEntry || !slices.Contains(storableStatus, status) || IsEventStream(resp) {
		return nil
	}
	// An answer that sets a cookie is its client's session, not a
	// resource: the cache is shared by every app on this computer.
	if len(resp.Values("Set-Cookie")) > 0 {
		return nil
	}
	if _, ok := Directives(req)["no-store"]; ok {
		return nil
	}
	d := Directives(resp)
	if _, ok := d["no-store"]; ok {
		return nil
	}
	var names []string
	for _, v := range resp.Values("Vary") {
		for n := range strings.SplitSeq(v, ",") {
			if n = http.CanonicalHeaderKey(strings.TrimSpace(n)); n == "*" {
				return nil
			} else if n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return &Admission{status: status, req: req, varyNames: names, directives: d}
}

// IsEventStream reports whether an answer with header h is an event
// stream (Content-Type: text/event-stream).
func IsEventStream(h http.Header) bool {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// PutAdmitted stores the answer a admitted, with resp as the header to keep
// (the admitted one less what must not be stored: the same caching fields)
// and its body, and reports whether it did (it may still be over the
// largest entry).
func (c *Cache) PutAdmitted(a *Admission, base string, resp http.Header, body []byte, road string) bool {
	return c.store(base, c.entry(a, base, resp, body, road))
}

// entry is the answer a admitted as the cache keeps it, at now.
func (c *Cache) entry(a *Admission, base string, resp http.Header, body []byte, road string) *Entry {
	status, req, names, d := a.status, a.req, a.varyNames, a.directives
	now := c.now()
	e := &Entry{Status: status, Header: resp.Clone(), Body: body, Road: road,
		varyNames: names, stored: now, lifetime: lifetime(d, resp, now)}
	_, noCache := d["no-cache"]
	_, mustRevalidate := d["must-revalidate"]
	_, proxyRevalidate := d["proxy-revalidate"]
	e.staleOK = !noCache && !mustRevalidate && !proxyRevalidate
	if noCache {
		e.lifetime = 0
	}
	if age, ok := ageOf(resp); ok && age > 0 {
		e.initialAge = age
	}
	e.Header.Del("Age")
	e.key = variant(base, names, req)
	return e
}

// store keeps e, an answer to base, unless it is over the largest entry,
// and reports whether it did.
func (c *Cache) store(base string, e *Entry) bool {
	size := e.size()
	if size > c.maxEntry {
		return false
	}
	names := e.varyNames
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.vary[base]; ok && !slices.Equal(old, names) {
		c.dropBaseLocked(base)
	}
	c.vary[base] = names
	if el, ok := c.items[e.key]; ok {
		c.removeLocked(el)
	}
	c.items[e.key] = c.lru.PushFront(e)
	c.used += size
	for c.used > c.max {
		c.removeLocked(c.lru.Back())
	}
	return true
}

// Freshen updates old, the stored answer to base for req, with the header
// of a 304 Not Modified that validated it (RFC 9111 §4.3.4): each field
// the 304 carries replaces the stored one's, but Content-Length and the
// hop-by-hop ones (the caller strips those), and the answer's freshness
// starts again from now. It returns the answer to serve, stored in old's
// place unless the 304 says no-store; the body is old's, not copied.
func (c *Cache) Freshen(old *Entry, base string, req, h304 http.Header, road string) *Entry {
	h := old.Header.Clone()
	for k, vs := range h304 {
		switch k {
		case "Content-Length", "Age":
			continue
		}
		h[k] = vs
	}
	if age := h304.Get("Age"); age != "" {
		h.Set("Age", age) // read by PutAdmitted as the answer's initial age, and not kept
	}
	a := c.Storable(old.Status, req, h, int64(len(old.Body)))
	if a == nil {
		// It may no longer be stored: served once, as validated, and
		// dropped.
		c.dropKey(old.key)
		e := *old
		e.Header, e.Road, e.stored, e.initialAge, e.lifetime = h, road, c.now(), 0, 0
		e.Header.Del("Age")
		return &e
	}
	e := c.entry(a, base, h, old.Body, road)
	c.store(base, e) // over the largest entry, it is served as validated and not kept
	return e
}

func (c *Cache) dropKey(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.removeLocked(el)
	}
}

// MaxEntry is the largest answer (in bytes) the cache stores.
func (c *Cache) MaxEntry() int64 { return c.maxEntry }

// Len reports how many answers are stored, and their size in bytes.
func (c *Cache) Len() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.used
}

func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*Entry)
	c.lru.Remove(el)
	delete(c.items, e.key)
	c.used -= e.size()
}

// Invalidate drops every stored answer for base (all its variants): a
// call to that URI may have changed it (RFC 9111 §4.4).
func (c *Cache) Invalidate(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropBaseLocked(base)
}

func (c *Cache) dropBaseLocked(base string) {
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if strings.HasPrefix(el.Value.(*Entry).key, base+"\x00") || el.Value.(*Entry).key == base {
			c.removeLocked(el)
		}
		el = next
	}
	for b := range c.vary {
		if b == base || strings.HasPrefix(b, base+"\x00") {
			delete(c.vary, b)
		}
	}
}

// HTTPDate parses an HTTP-date as RFC 9110 §5.6.7 defines it, in any of
// its three formats (IMF-fixdate, and the obsolete RFC 850 and asctime
// ones a recipient must accept), exactly: Go's http.ParseTime takes runs
// of spaces as one and a one-digit hour, which are not HTTP-dates.
func HTTPDate(s string) (time.Time, bool) {
	for _, layout := range []string{http.TimeFormat, "Monday, 02-Jan-06 15:04:05 GMT", time.ANSIC} {
		if t, err := time.Parse(layout, s); err == nil && t.Format(layout) == s {
			return t, true
		}
	}
	return time.Time{}, false
}

// maxDeltaSeconds is the largest delta-seconds a cache keeps (RFC 9111
// §1.2.2: 2^31, for a value too large to represent).
const maxDeltaSeconds = 1 << 31

// ageOf reads an answer's Age (RFC 9111 §5.1): the first member of the
// field's first line, which must be digits alone; anything else (a sign,
// a unit, a fraction, text after the digits) is invalid and ignored
// (ok false).
func ageOf(h http.Header) (time.Duration, bool) {
	v := h.Get("Age")
	if v == "" {
		return 0, false
	}
	v, _, _ = strings.Cut(v, ",")
	v = strings.Trim(v, " \t")
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > maxDeltaSeconds {
		n = maxDeltaSeconds // all digits: only too large
	}
	return time.Duration(n) * time.Second, true
}

// lifetime is the freshness lifetime of a response for a private cache:
// max-age, else Expires minus Date, else zero (no heuristic freshness).
func lifetime(d map[string]string, h http.Header, now time.Time) time.Duration {
	if v, ok := d["max-age"]; ok {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
		return 0
	}
	if exps := h.Values("Expires"); len(exps) > 0 {
		// RFC 9111 §5.3: an Expires that is not one valid HTTP-date
		// (two field lines, extra spaces, a one-digit hour, "0") is a
		// time in the past: the answer is stale.
		if len(exps) > 1 {
			return 0
		}
		t, ok := HTTPDate(exps[0])
		if !ok {
			return 0
		}
		date := now
		if ds := h.Values("Date"); len(ds) == 1 {
			if dt, ok := HTTPDate(ds[0]); ok {
				date = dt
			}
		}
		if l := t.Sub(date); l > 0 {
			return l
		}
	}
	return 0
}
