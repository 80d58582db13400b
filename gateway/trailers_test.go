package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTrailers: an app's trailers reach the caller's app through two
// Deltas, read by Go's client in resp.Trailer: on a read's answer and on
// a call's (a small one, kept whole, and a stream), announced or not;
// and a call's answer replayed from the journal ends with them too. A
// read whose answer has trailers is not cached (the cache keeps none).
// Delta's own names never pass as trailers.
func TestTrailers(t *testing.T) {
	checkNoLeaks(t)
	laptop, studio := pair(t, nil)
	var reads atomic.Int32 // the app's handler counts; the test reads
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			reads.Add(1)
		}
		w.Header().Set("Cache-Control", "max-age=60")
		switch r.URL.Path {
		case "/announced":
			w.Header().Set("Trailer", "X-Sum, X-Delta-Outcome")
			io.WriteString(w, "hello")
			w.Header().Set("X-Sum", "42")
			w.Header().Set("X-Delta-Outcome", "forged")
		case "/unannounced":
			io.WriteString(w, "hello")
			w.(http.Flusher).Flush() // chunked: room for trailers
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		case "/stream":
			w.Header().Set("Trailer", "X-Sum")
			for range 3 {
				io.WriteString(w, strings.Repeat("s", 1<<20)) // over the 1 MiB kept whole: streamed
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Sum", "stream")
		}
	}))
	defer app.Close()
	studio.register(t, "trail", app.URL)

	do := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("a call")
		}
		req, _ := http.NewRequest(method, laptop.c.URL+"/v1/peers/studio/trail"+path, body)
		req.Header.Set("Authorization", "Bearer "+laptop.c.Token)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: the body: %v", method, path, err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("X-Delta-Outcome") != "answered" {
			t.Fatalf("%s %s: %d %q %s", method, path, resp.StatusCode, resp.Header.Get("X-Delta-Outcome"), b)
		}
		return resp, string(b)
	}
	check := func(what string, resp *http.Response, body, wantBody, name, want string) {
		t.Helper()
		if body != wantBody {
			t.Errorf("%s: body of %d bytes, want %d", what, len(body), len(wantBody))
		}
		if got := resp.Trailer.Get(name); got != want {
			t.Errorf("%s: trailer %s %q, want %q (trailers %v)", what, name, got, want, resp.Trailer)
		}
		if _, ok := resp.Trailer["X-Delta-Outcome"]; ok {
			t.Errorf("%s: an app's X-Delta-Outcome passed as a trailer: %v", what, resp.Trailer)
		}
	}

	resp, body := do("GET", "/announced")
	check("a read, announced", resp, body, "hello", "X-Sum", "42")
	resp, body = do("GET", "/announced")
	check("the same read again (not from the cache)", resp, body, "hello", "X-Sum", "42")
	if n := reads.Load(); n != 2 {
		t.Errorf("the app was read %d times, want 2: an answer with trailers is not cached", n)
	}
	// As curl reads it (its dump of the head ends with the trailers, after
	// the body): the same trailer, through two Deltas.
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-sS", "-D", "-", "-o", "/dev/null", "-H", "Authorization: Bearer "+laptop.c.Token,
			laptop.c.URL+"/v1/peers/studio/trail/announced").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "\r\n\r\nX-Sum: 42\r\n") {
			t.Errorf("curl: %v, the head and trailers it dumped: %q", err, out)
		}
	} else {
		t.Log("no curl on this machine: the trailers are checked with Go's client only")
	}
	resp, body = do("GET", "/unannounced")
	check("a read, unannounced", resp, body, "hello", "X-Late", "late")
	resp, body = do("GET", "/stream")
	check("a read, streamed", resp, body, strings.Repeat("s", 3<<20), "X-Sum", "stream")

	resp, body = do("POST", "/announced", "X-Delta-Request-Id", "trailer-call-1")
	check("a call's answer", resp, body, "hello", "X-Sum", "42")
	resp, body = do("POST", "/announced", "X-Delta-Request-Id", "trailer-call-1")
	if resp.Header.Get("X-Delta-Replayed") != "true" {
		t.Errorf("the same call again was not replayed")
	}
	check("a call's answer replayed", resp, body, "hello", "X-Sum", "42")
	resp, body = do("POST", "/unannounced", "X-Delta-Request-Id", "trailer-call-2")
	check("a call's answer, unannounced", resp, body, "hello", "X-Late", "late")
	resp, body = do("POST", "/stream", "X-Delta-Request-Id", "trailer-call-3")
	check("a call's streamed answer", resp, body, strings.Repeat("s", 3<<20), "X-Sum", "stream")
	// Replayed: over 1 MiB, its body is not kept (said so), its trailers are.
	resp, body = do("POST", "/stream", "X-Delta-Request-Id", "trailer-call-3")
	if resp.Header.Get("X-Delta-Replayed") != "true" || resp.Header.Get("X-Delta-Answer-Omitted") == "" {
		t.Errorf("the same streamed call again: replayed %q, omitted %q", resp.Header.Get("X-Delta-Replayed"), resp.Header.Get("X-Delta-Answer-Omitted"))
	}
	check("a call's streamed answer replayed", resp, body, "", "X-Sum", "stream")
}
