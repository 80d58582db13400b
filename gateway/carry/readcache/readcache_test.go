package readcache

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestFreshness(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := New(1<<20, clk.now)
	k := Key("studio", "notes", "/a")
	if !c.Put(k, nil, 200, hdr("Cache-Control", "max-age=10", "Age", "3"), []byte("x"), "lan") {
		t.Fatal("not stored")
	}
	e := c.Get(k, nil)
	if e == nil || !e.Fresh(clk.now()) || e.Age(clk.now()) != 3*time.Second || e.Road != "lan" {
		t.Fatalf("entry %+v", e)
	}
	clk.t = clk.t.Add(7 * time.Second)
	if e.Fresh(clk.now()) || !e.StaleOK() {
		t.Errorf("at age 10 s: fresh=%v staleOK=%v", e.Fresh(clk.now()), e.StaleOK())
	}
	date := clk.t.Format(http.TimeFormat)
	exp := clk.t.Add(time.Minute).Format(http.TimeFormat)
	c.Put(Key("s", "a", "/exp"), nil, 200, hdr("Date", date, "Expires", exp), nil, "lan")
	if e := c.Get(Key("s", "a", "/exp"), nil); e == nil || !e.Fresh(clk.now()) {
		t.Errorf("Expires-based freshness: %+v", e)
	}
}

func TestWhatIsStored(t *testing.T) {
	c := New(1<<20, nil)
	for i, tc := range []struct {
		status  int
		req     http.Header
		resp    http.Header
		stored  bool
		staleOK bool
	}{
		{200, nil, hdr(), true, true},
		{200, nil, hdr("Cache-Control", "no-store"), false, false},
		{200, hdr("Cache-Control", "no-store"), hdr(), false, false},
		{200, nil, hdr("Cache-Control", "no-cache"), true, false},
		{200, nil, hdr("Cache-Control", "max-age=60, must-revalidate"), true, false},
		{200, nil, hdr("Vary", "*"), false, false},
		{500, nil, hdr("Cache-Control", "max-age=60"), false, false},
		{404, nil, hdr(), true, true},
	} {
		k := Key("p", "a", fmt.Sprint(i))
		// What the relay asks before it keeps a copy agrees with Put.
		if got := c.Storable(tc.status, tc.req, tc.resp, -1) != nil; got != tc.stored {
			t.Errorf("case %d: Storable=%v, want %v", i, got, tc.stored)
		}
		if got := c.Put(k, tc.req, tc.status, tc.resp, []byte("b"), "lan"); got != tc.stored {
			t.Errorf("case %d: stored=%v, want %v", i, got, tc.stored)
			continue
		}
		if tc.stored {
			e := c.Get(k, nil)
			if e.StaleOK() != tc.staleOK {
				t.Errorf("case %d: staleOK=%v", i, e.StaleOK())
			}
			if _, ok := Directives(tc.resp)["no-cache"]; ok && e.Fresh(time.Now()) {
				t.Errorf("case %d: a no-cache answer is fresh", i)
			}
		}
	}
}

// TestStorableLength: an answer whose length is over the largest entry is
// not copied for the cache; one of unknown length is (and Put then judges
// the copy).
func TestStorableLength(t *testing.T) {
	c := New(8<<20, nil)
	for _, tc := range []struct {
		length int64
		want   bool
	}{{-1, true}, {0, true}, {1 << 20, true}, {c.MaxEntry(), true}, {c.MaxEntry() + 1, false}} {
		if got := c.Storable(200, nil, hdr(), tc.length) != nil; got != tc.want {
			t.Errorf("length %d: Storable=%v, want %v", tc.length, got, tc.want)
		}
	}
}

func TestVary(t *testing.T) {
	c := New(1<<20, nil)
	k := Key("p", "a", "/v")
	c.Put(k, hdr("Accept-Language", "en"), 200, hdr("Vary", "accept-language", "Cache-Control", "max-age=60"), []byte("hello"), "lan")
	c.Put(k, hdr("Accept-Language", "fr"), 200, hdr("Vary", "Accept-Language", "Cache-Control", "max-age=60"), []byte("bonjour"), "lan")
	if e := c.Get(k, hdr("Accept-Language", "fr")); e == nil || string(e.Body) != "bonjour" {
		t.Errorf("fr: %v", e)
	}
	if e := c.Get(k, hdr("Accept-Language", "en")); e == nil || string(e.Body) != "hello" {
		t.Errorf("en: %v", e)
	}
	if e := c.Get(k, hdr("Accept-Language", "de")); e != nil {
		t.Errorf("de matched %q", e.Body)
	}
}

func TestBoundedLRU(t *testing.T) {
	c := New(8<<10, nil) // one entry at most 1 KiB
	body := make([]byte, 900)
	for i := range 20 {
		c.Put(Key("p", "a", fmt.Sprint(i)), nil, 200, hdr(), body, "lan")
		c.Get(Key("p", "a", "0"), nil) // keep 0 recently used
	}
	n, bytes := c.Len()
	if bytes > 8<<10 || n >= 20 {
		t.Errorf("%d entries, %d bytes; bound is 8 KiB", n, bytes)
	}
	if c.Get(Key("p", "a", "0"), nil) == nil {
		t.Errorf("the most recently used entry was evicted")
	}
	if c.Get(Key("p", "a", "1"), nil) != nil {
		t.Errorf("the least recently used entry was kept")
	}
	if c.Put(Key("p", "a", "big"), nil, 200, hdr(), make([]byte, 2<<10+1), "lan") {
		t.Errorf("an answer over a quarter of the cache was stored")
	}
}

func TestRequestBypasses(t *testing.T) {
	for h, want := range map[*http.Header]bool{
		ptr(hdr()): false, ptr(hdr("Cache-Control", "no-cache")): true, ptr(hdr("Cache-Control", "max-age=0")): true,
		ptr(hdr("Pragma", "no-cache")): true, ptr(hdr("Cache-Control", "max-age=5")): false,
	} {
		if RequestBypasses(*h) != want {
			t.Errorf("%v: %v", *h, !want)
		}
	}
}

func ptr(h http.Header) *http.Header { return &h }

// TestFreshen: a 304's fields replace the stored ones (but Content-Length),
// its freshness starts again, the body is the stored one (not a copy), and
// a 304 that says no-store drops the answer it validated.
func TestFreshen(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := New(1<<20, clk.now)
	k := Key("studio", "docs", "/a")
	body := []byte("the body")
	c.Put(k, nil, 200, hdr("Cache-Control", "max-age=10", "ETag", `"v1"`, "Last-Modified", "Sun, 01 Nov 2026 12:00:00 GMT", "X-Kept", "old", "Content-Type", "text/plain"), body, "lan")
	old := c.Get(k, nil)
	if v := old.Validators(); v.Get("If-None-Match") != `"v1"` || v.Get("If-Modified-Since") != "Sun, 01 Nov 2026 12:00:00 GMT" {
		t.Errorf("validators %v", v)
	}
	if v := (&Entry{Header: hdr("Last-Modified", "not a date")}).Validators(); v != nil {
		t.Errorf("an unparseable Last-Modified is a validator: %v", v)
	}
	clk.t = clk.t.Add(time.Minute)
	if old.Fresh(clk.now()) {
		t.Fatal("fresh after a minute")
	}
	e := c.Freshen(old, k, nil, hdr("Cache-Control", "max-age=30", "X-Kept", "new", "Content-Length", "0", "Age", "2"), "tailnet")
	if !e.Fresh(clk.now()) || e.Age(clk.now()) != 2*time.Second || e.Header.Get("X-Kept") != "new" || e.Header.Get("Content-Type") != "text/plain" ||
		e.Header.Get("Content-Length") != "" || e.Header.Get("Age") != "" || e.Road != "tailnet" || &e.Body[0] != &body[0] {
		t.Errorf("freshened: %+v", e)
	}
	if got := c.Get(k, nil); got != e {
		t.Errorf("the freshened answer is not the stored one")
	}
	if e := c.Freshen(e, k, nil, hdr("Cache-Control", "no-store"), "thunderbolt"); e.Road != "thunderbolt" || string(e.Body) != "the body" {
		t.Errorf("a 304 with no-store: served %q from road %q, want the body from the 304's road", e.Body, e.Road)
	}
	if c.Get(k, nil) != nil {
		t.Errorf("a 304 with no-store left the answer stored")
	}
	for _, h := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"} {
		if !Conditional(hdr(h, "x")) {
			t.Errorf("%s is not conditional", h)
		}
	}
	if Conditional(hdr("Accept", "*/*")) {
		t.Error("Accept is conditional")
	}
}

// TestDoors: an answer is kept per door (the Host and prefix its client
// used, which the owner app may build it from), and a call's
// invalidation of the path drops it at every door; an answer that sets a
// cookie is never kept.
func TestDoors(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := New(1<<20, clk.now)
	a, b := KeyAt("studio", "web", "/", "127.0.0.1:7420/v1/peers/studio/web"), KeyAt("studio", "web", "/", "127.0.0.1:4100")
	c.Put(a, nil, 200, hdr("Cache-Control", "max-age=60", "Vary", "Accept"), []byte("links to 127.0.0.1:7420"), "lan")
	if c.Get(b, nil) != nil {
		t.Fatal("an answer through one door was served at another")
	}
	c.Put(b, nil, 200, hdr("Cache-Control", "max-age=60"), []byte("links to 127.0.0.1:4100"), "lan")
	c.Invalidate(Key("studio", "web", "/"))
	if c.Get(a, nil) != nil || c.Get(b, nil) != nil || len(c.vary) != 0 {
		t.Errorf("after the path's invalidation: %v %v, %d vary entries left", c.Get(a, nil), c.Get(b, nil), len(c.vary))
	}
	if c.Storable(200, nil, hdr("Cache-Control", "max-age=60", "Set-Cookie", "sid=1"), 1) != nil {
		t.Error("an answer that sets a cookie is storable")
	}
}

// TestDateAndAgeParsing: RFC 9111 §5.3, an Expires that is not exactly
// one HTTP-date makes the answer stale; §5.1, an Age that is not digits
// alone is ignored (issue 36: Go's http.ParseTime took extra spaces and a
// one-digit hour, strconv.Atoi a sign).
func TestDateAndAgeParsing(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	date := clk.t.Format(http.TimeFormat)
	for _, tc := range []struct {
		name    string
		expires []string
		fresh   bool
	}{
		{"IMF-fixdate", []string{"Thu, 01 Jan 2026 01:00:00 GMT"}, true},
		{"RFC 850", []string{"Thursday, 01-Jan-26 01:00:00 GMT"}, true},
		{"asctime", []string{"Thu Jan  1 01:00:00 2026"}, true},
		{"extra spaces", []string{"Thu,  01 Jan 2026 01:00:00 GMT"}, false},
		{"a one-digit hour", []string{"Thu, 01 Jan 2026 1:00:00 GMT"}, false},
		{"two lines", []string{"Thu, 01 Jan 2026 01:00:00 GMT", "Thu, 01 Jan 2026 02:00:00 GMT"}, false},
		{"zero", []string{"0"}, false},
		{"not GMT", []string{"Thu, 01 Jan 2026 01:00:00 PST"}, false},
	} {
		c := New(1<<20, clk.now)
		h := hdr("Date", date)
		h["Expires"] = tc.expires
		k := Key("s", "a", "/"+tc.name)
		c.Put(k, nil, 200, h, []byte("x"), "lan")
		e := c.Get(k, nil)
		if fresh := e != nil && e.Fresh(clk.now()); fresh != tc.fresh {
			t.Errorf("Expires %q: fresh %t, want %t", tc.expires, fresh, tc.fresh)
		}
	}
	for v, want := range map[string]time.Duration{"3": 3 * time.Second, "3, 9": 3 * time.Second, "007": 7 * time.Second, "+3": 0, "-3": 0, "3s": 0, "3.5": 0, "3 x": 0, "": 0,
		"99999999999999999999": maxDeltaSeconds * time.Second} {
		c := New(1<<20, clk.now)
		k := Key("s", "a", "/age")
		c.Put(k, nil, 200, hdr("Cache-Control", "max-age=100", "Age", v), []byte("x"), "lan")
		if e := c.Get(k, nil); e == nil || e.Age(clk.now()) != want {
			t.Errorf("Age %q: entry %+v, want age %s", v, e, want)
		}
	}
}
