package relay

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestKeptBodyLike: a body that is the one it is like keeps no copy of its
// own (Kept is Like), one that departs from it at any point, is shorter,
// or is longer, is kept exactly as it came, and Like is never written to.
func TestKeptBodyLike(t *testing.T) {
	like := []byte("the quick brown fox")
	orig := string(like)
	write := func(k *KeptBody, parts ...string) []byte {
		for _, p := range parts {
			if n, err := k.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", p, n, err)
			}
		}
		b, ok := k.Kept()
		if !ok {
			t.Fatalf("nothing kept of %q", parts)
		}
		return b
	}
	k := &KeptBody{Limit: 100, Like: like}
	k.Grow(int64(len(like)))
	if b := write(k, "the quick ", "brown fox"); string(b) != orig || &b[0] != &like[0] {
		t.Errorf("the same body: kept %q (a copy: %v), want Like itself", b, string(b) == orig)
	}
	for _, c := range []struct{ parts []string }{
		{[]string{"the quick ", "brown cat"}},         // departs in the second write
		{[]string{"a quick brown fox"}},               // departs at once
		{[]string{"the quick"}},                       // shorter
		{[]string{"the quick brown fox", " jumps"}},   // longer
		{[]string{"the quick brown fox jumps", "!!"}}, // longer in one write
	} {
		k := &KeptBody{Limit: 100, Like: like}
		k.Grow(30)
		want := strings.Join(c.parts, "")
		if b := write(k, c.parts...); string(b) != want {
			t.Errorf("%q: kept %q", c.parts, b)
		}
	}
	k = &KeptBody{Limit: 22, Like: like}
	k.Write([]byte("the quick brown fox"))
	k.Write([]byte(" jumps"))
	if b, ok := k.Kept(); ok {
		t.Errorf("over Limit after departing from Like: kept %q", b)
	}
	if string(like) != orig {
		t.Errorf("Like was written to: %q", like)
	}
	// Kept of a shorter body is a part of Like that cannot grow into it.
	k = &KeptBody{Limit: 100, Like: like}
	k.Write([]byte("the"))
	b, _ := k.Kept()
	if cap(b) != 3 {
		t.Errorf("Kept of a prefix has cap %d, want 3", cap(b))
	}
}

// TestHead: the head an answer is passed on with. A HEAD's answer keeps
// the length its header says (what a GET would get: restic reads a file's
// size so); a GET's is the length read; an answer with trailers goes
// chunked, its trailers announced (never Delta's own names, nor a name
// that is a header's too); hop-by-hop fields and X-Delta-* never pass; a
// hop's own fields are set.
func TestHead(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		header       http.Header
		length       int64
		trailer      http.Header
		want         http.Header
	}{
		{"HEAD", http.MethodHead, http.Header{"Content-Length": {"1000"}}, 1000, nil,
			http.Header{"Content-Length": {"1000"}, "X-Hop": {"1"}}},
		{"GET", http.MethodGet, http.Header{"Content-Length": {"5"}, "Connection": {"close"}, "X-Delta-Outcome": {"forged"}}, 5, nil,
			http.Header{"Content-Length": {"5"}, "X-Hop": {"1"}}},
		{"unknown length", http.MethodGet, http.Header{"Content-Type": {"text/plain"}}, -1, nil,
			http.Header{"Content-Type": {"text/plain"}, "X-Hop": {"1"}}},
		{"trailers", http.MethodGet, http.Header{"Content-Length": {"5"}, "Etag": {"x"}}, 5, http.Header{"X-Sum": nil, "Etag": nil, "X-Delta-Outcome": nil},
			http.Header{"Etag": {"x"}, "Trailer": {"X-Sum"}, "X-Hop": {"1"}}},
	} {
		w := httptest.NewRecorder()
		head(w, 200, tc.header, tc.length, tc.trailer, tc.method, "X-Hop", "1", "X-Empty", "")
		if got := w.Result().Header; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPassHead: a head is sent at once unless the body's first bytes
// are here to go with it (Ready: a reader that says what it holds).
func TestPassHead(t *testing.T) {
	for _, ready := range []bool{false, true} {
		w := httptest.NewRecorder()
		head(w, 200, http.Header{"Content-Type": {"text/event-stream"}}, -1, nil, "GET")
		if err := passHead(w, ready); err != nil {
			t.Fatal(err)
		}
		if w.Flushed == ready {
			t.Errorf("ready=%v: flushed %v", ready, w.Flushed)
		}
	}
	br := bufio.NewReader(strings.NewReader("data: 1\n\n"))
	if ready(br) {
		t.Error("Ready before anything was read into the buffer")
	}
	br.Peek(1)
	if !ready(br) || ready(strings.NewReader("x")) {
		t.Error("Ready: a buffer holding bytes is ready; a reader that cannot say is not")
	}
}

// sizes is a body of n bytes whose reads give at most most bytes each,
// and note how much room each read was offered.
type sizes struct {
	n, most int
	offered []int
}

func (s *sizes) Read(p []byte) (int, error) {
	s.offered = append(s.offered, len(p))
	if s.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), s.most, s.n)
	for i := range k {
		p[i] = byte(s.n - i)
	}
	s.n -= k
	return k, nil
}

// TestFlowPieces: Flow reads in 32 KiB pieces, and in 256 KiB ones once
// 128 KiB have passed and a read filled its buffer (more was waiting); a
// body that comes in small reads, or of up to 128 KiB, never takes a big
// buffer. Either way every byte is passed on, in order.
func TestFlowPieces(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, most   int
		wantFirst int
		wantLater int
	}{
		{"a long answer that keeps coming", 1 << 20, 1 << 30, 32 << 10, bigBuffer},
		{"an answer in small reads", 1 << 20, 16 << 10, 32 << 10, 32 << 10},
		{"a short answer", 1024, 1 << 30, 32 << 10, 32 << 10},
		{"an answer of 128 KiB", 128 << 10, 1 << 30, 32 << 10, 32 << 10},
		{"an answer of 160 KiB", 160 << 10, 1 << 30, 32 << 10, bigBuffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &sizes{n: tc.n, most: tc.most}
			want := &sizes{n: tc.n, most: tc.n}
			wantBody := make([]byte, tc.n)
			want.Read(wantBody)
			rec := httptest.NewRecorder()
			n, err := Flow(rec, src, nil)
			if err != nil || n != int64(tc.n) || !bytes.Equal(rec.Body.Bytes(), wantBody) {
				t.Fatalf("Flow passed on %d bytes (%v), equal: %v", n, err, bytes.Equal(rec.Body.Bytes(), wantBody))
			}
			if got := src.offered[0]; got != tc.wantFirst {
				t.Errorf("the first read was offered %d bytes, want %d", got, tc.wantFirst)
			}
			if got := src.offered[len(src.offered)-1]; got != tc.wantLater {
				t.Errorf("the last read was offered %d bytes, want %d", got, tc.wantLater)
			}
		})
	}
}
