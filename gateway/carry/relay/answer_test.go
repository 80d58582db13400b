package relay

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// brokenBody gives its bytes, then an error: an answer that broke off.
type brokenBody struct{ r io.Reader }

func (b brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset")
	}
	return n, err
}

// relayed runs Relay and reports whether it cut the answer (Abort's
// panic), as net/http's server would.
func relayed(w http.ResponseWriter, a Answer) (cut bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			cut = true
		}
	}()
	Relay(w, a)
	return false
}

// TestRelay: one call relays an answer in the only right order: the head
// with this hop's fields, the body, then the trailers that came (also
// those the head did not announce); a body that broke off is told to
// OnCut and cut, never ended with its trailers; a HEAD's answer passes
// its head only.
func TestRelay(t *testing.T) {
	trailer := http.Header{"X-Sum": nil}
	w := httptest.NewRecorder()
	body := strings.NewReader("hello")
	var kept strings.Builder
	cut := relayed(w, Answer{Status: 201, Header: http.Header{"Connection": {"x"}, "X-Delta-Outcome": {"forged"}, "Content-Type": {"text/plain"}},
		Length: 5, Trailer: &trailer, Set: []string{"X-Delta-Outcome", "answered", "X-Delta-Route", ""},
		Body: readThen{body, func() { trailer = http.Header{"X-Sum": {"abc"}, "X-Late": {"late"}} }}, Also: &kept})
	res := w.Result()
	got, _ := io.ReadAll(res.Body)
	if cut || res.StatusCode != 201 || string(got) != "hello" || kept.String() != "hello" {
		t.Fatalf("cut %v, %d %q (kept %q)", cut, res.StatusCode, got, kept.String())
	}
	if res.Header.Get("X-Delta-Outcome") != "answered" || res.Header.Get("Connection") != "" || res.Header.Get("X-Delta-Route") != "" || res.Header.Get("Trailer") != "X-Sum" {
		t.Errorf("head: %v", res.Header)
	}
	if res.Trailer.Get("X-Sum") != "abc" || res.Trailer.Get("X-Late") != "late" {
		t.Errorf("trailers: %v", res.Trailer)
	}

	w = httptest.NewRecorder()
	var told error
	trailer = http.Header{"X-Sum": {"never"}}
	cut = relayed(w, Answer{Status: 200, Header: http.Header{}, Length: -1, Trailer: &trailer, Body: brokenBody{strings.NewReader("part")},
		OnCut: func(err error) { told = err }})
	if !cut || told == nil || !strings.Contains(told.Error(), "reset") {
		t.Fatalf("a body that broke off: cut %v, told %v", cut, told)
	}
	if w.Result().Trailer.Get("X-Sum") != "" {
		t.Error("a cut answer ended with its trailers")
	}

	w = httptest.NewRecorder()
	passed := false
	cut = relayed(w, Answer{Status: 200, Header: http.Header{"Content-Length": {"9"}}, Length: 9, Method: http.MethodHead,
		Pass: func(http.ResponseWriter) (http.Header, error) { passed = true; return nil, nil }})
	if cut || passed || w.Body.Len() != 0 || w.Result().Header.Get("Content-Length") != "9" {
		t.Errorf("a HEAD's answer: cut %v, passed %v, body %q, %v", cut, passed, w.Body, w.Result().Header)
	}
}

// readThen reads r, and calls end when it has ended (a client filling in
// the trailers at the body's end).
type readThen struct {
	r   io.Reader
	end func()
}

func (b readThen) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.end != nil {
		b.end()
	}
	return n, err
}

// TestInterim: a 103 passes, stripped of hop-by-hop fields, and leaves
// the final answer's header empty; other interim answers go nowhere.
func TestInterim(t *testing.T) {
	w := httptest.NewRecorder()
	if Interim(w, http.StatusContinue, map[string][]string{"X": {"1"}}) {
		t.Error("a 100 passed on")
	}
	if !Interim(w, http.StatusEarlyHints, map[string][]string{"Link": {"</a.css>; rel=preload"}, "Connection": {"close"}}) {
		t.Fatal("a 103 not passed on")
	}
	if len(w.Header()) != 0 {
		t.Errorf("the final answer's header kept the 103's: %v", w.Header())
	}
}
