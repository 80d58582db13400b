package owner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/state/journal"
	"github.com/delta-roads/delta/gateway/state/statedir"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// fuzzDoor admits every request as laptop: the request carries a valid
// ticket (the door itself is tested in gateway).
type fuzzDoor struct{}

func (fuzzDoor) Identify(*http.Request) (Visitor, error) {
	return Visitor{Node: "node-laptop", Name: "laptop"}, nil
}

// FuzzOwnerDoor feeds arbitrary requests, past the door with a valid
// ticket, to the owner's side of the peer API, with a real journal and a
// real app: every reply says whose it is (X-Delta-Outcome), nothing
// panics but a cut answer's abort, and the app never sees a request id
// twice, whatever arrives under it.
func FuzzOwnerDoor(f *testing.F) {
	for _, s := range []string{
		"POST /delta/v1/apps/notes/a HTTP/1.1\r\nHost: s\r\nX-Delta-Request-Id: r1\r\nX-Delta-Digest: " + proto.Digest("POST", "notes", "/a", []byte("b")) + "\r\nContent-Length: 1\r\n\r\nb",
		"POST /delta/v1/apps/notes/a HTTP/1.1\r\nHost: s\r\nX-Delta-Request-Id: r1\r\nX-Delta-Digest: 00\r\nContent-Length: 1\r\n\r\nc",
		"PUT /delta/v1/apps/notes/s HTTP/1.1\r\nHost: s\r\nX-Delta-Request-Id: r2\r\nTrailer: X-Delta-Digest\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Delta-Digest: " + proto.Digest("PUT", "notes", "/s", []byte("x")) + "\r\n\r\n",
		"PUT /delta/v1/apps/notes/s HTTP/1.1\r\nHost: s\r\nX-Delta-Request-Id: r4\r\nTrailer: X-Delta-Body-Passed\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-Delta-Body-Passed: 1\r\n\r\n",
		"GET /delta/v1/apps/notes/r?x=1 HTTP/1.1\r\nHost: s\r\nX-Delta-Timeout: 1\r\n\r\n",
		"GET /delta/v1/apps/n%6Ftes/r HTTP/1.1\r\nHost: s\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET /delta/v1/calls/r1?digest=x HTTP/1.1\r\nHost: s\r\n\r\n",
		"POST /delta/v1/calls/r1/settled HTTP/1.1\r\nHost: s\r\nContent-Length: 57\r\n\r\n{\"state\":\"carried_out\",\"by\":\"a person\",\"at\":\"2026-12-02\"}",
		"DELETE /delta/v1/apps/nowhere/x HTTP/1.1\r\nHost: s\r\nX-Delta-Request-Id: r3\r\n\r\n",
		"TRACE /delta/v1/apps/notes/x HTTP/1.1\r\nHost: s\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	// The journal on a memory file system where there is one: fsyncs there
	// cost nothing.
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "delta-fuzz-owner-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	var mu sync.Mutex
	seen := map[string]int{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if id := r.Header.Get(localapi.HeaderRequestID); id != "" {
			mu.Lock()
			seen[id]++
			mu.Unlock()
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "done")
	}))
	f.Cleanup(app.Close)
	h := testDoor(f, dir, app.URL)
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		r.RemoteAddr = "127.0.0.2:1234"
		if h := r.Header.Get(localapi.HeaderTimeout); h != "" {
			if d, err := proto.ParseTimeout(h); err == nil && d > 2*time.Second {
				r.Header.Set(localapi.HeaderTimeout, "2") // a fuzzed timeout is not waited for
			}
		} else {
			r.Header.Set(localapi.HeaderTimeout, "2")
		}
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if p := recover(); p != nil && !errors.Is(asError(p), http.ErrAbortHandler) {
					t.Fatalf("%q: the owner panicked: %v", raw, p)
				}
			}()
			h.ServeHTTP(rec, r)
		}()
		if rec.Header().Get(localapi.HeaderOutcome) == "" && rec.Code != http.StatusSwitchingProtocols {
			t.Fatalf("%q: a reply without %s: %d %s", raw, localapi.HeaderOutcome, rec.Code, rec.Body)
		}
		mu.Lock()
		defer mu.Unlock()
		for id, n := range seen {
			if n > 1 {
				t.Fatalf("%q: the app saw request id %q %d times", raw, id, n)
			}
		}
		if strings.Contains(rec.Body.String(), "\x00") && rec.Header().Get(localapi.HeaderOutcome) != string(proto.PeerAnswered) {
			t.Fatalf("%q: Delta's own reply holds a NUL", raw)
		}
	})
}

// testDoor is the owner's side of the peer API past fuzzDoor, with a real
// journal in dir and the app notes at appURL.
func testDoor(tb testing.TB, dir, appURL string) http.Handler {
	db, err := journal.Open(filepath.Join(dir, statedir.JournalFile), journal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Apps().Put(context.Background(), "notes", appURL, 0, false); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	var wg sync.WaitGroup
	tb.Cleanup(wg.Wait)
	spool := filepath.Join(dir, "spool")
	if err := CleanSpool(spool); err != nil {
		tb.Fatal(err)
	}
	o := New(Config{DB: db, Self: func() localapi.Self { return localapi.Self{Name: "studio", Node: "node-studio"} }, Log: slog.New(slog.DiscardHandler), Ctx: ctx,
		Go: func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }, SpoolDir: spool, MaxCallBytes: 1 << 20})
	return o.Handler(fuzzDoor{}, nil)
}

func asError(p any) error {
	if err, ok := p.(error); ok {
		return err
	}
	return fmt.Errorf("%v", p)
}
