package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/kit"
	"github.com/delta-roads/delta/tools/procmem"
)

// The tests of DESIGN §2a, "Everything an app sends": each through two
// Deltas as processes (static mode, plain TCP between them), with real
// clients where the behaviour is theirs (curl, Go's client, Python's).

// pattern is the body of a big answer: bytes that depend on their offset
// only, made as they are read (nothing big is held by the test either).
var pattern = func() []byte {
	b := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}()

// patternFile is size bytes of pattern as an io.ReadSeeker, for
// http.ServeContent (ranges, If-Range).
type patternFile struct{ off, size int64 }

func (p *patternFile) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) && p.off < p.size {
		i := p.off % int64(len(pattern))
		m := copy(b[n:], pattern[i:min(int64(len(pattern)), i+p.size-p.off)])
		n += m
		p.off += int64(m)
	}
	return n, nil
}

func (p *patternFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		p.off = off
	case io.SeekCurrent:
		p.off += off
	case io.SeekEnd:
		p.off = p.size + off
	}
	return p.off, nil
}

// patternSum is the SHA-256 of size bytes of pattern.
func patternSum(size int64) string {
	h := sha256.New()
	io.Copy(h, &patternFile{size: size})
	return hex.EncodeToString(h.Sum(nil))
}

// richApp is an owner app that answers as real apps do: streams, interim
// answers, big bodies with ranges, event streams, WebSockets, uploads.
type richApp struct {
	URL     string
	release chan struct{} // /stall waits on it
	mu      sync.Mutex
	uploads map[string]string // request id → "size sha256" of what arrived
	hits    map[string]int    // path → requests
	// wsClosed hears when a WebSocket's connection ended on the app's side.
	wsClosed chan time.Time
	// sseSeen hears from the reader of /sse which event it has: the app
	// writes the next only then. sseHeld counts the events the reader
	// did not have while the app waited (sseWait) before writing on.
	sseSeen chan int
	sseHeld int
}

// sseWait is how long /sse waits for its reader to have an event before
// it writes the next anyway (and counts the event as held back).
const sseWait = 10 * time.Second

func startRichApp(t *testing.T) *richApp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startRichAppOn(t, ln)
}

// startRichAppOn serves a richApp on ln (a listener made in a lab's
// namespace).
func startRichAppOn(t *testing.T, ln net.Listener) *richApp {
	t.Helper()
	a := &richApp{release: make(chan struct{}), uploads: map[string]string{}, hits: map[string]int{}, wsClosed: make(chan time.Time, 16), sseSeen: make(chan int, 8)}
	a.URL = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: a}
	go srv.Serve(ln)
	t.Cleanup(func() {
		a.Release()
		srv.Close()
	})
	return a
}

// Release lets /stall end.
func (a *richApp) Release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.release:
	default:
		close(a.release)
	}
}

func (a *richApp) hitsOf(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[path]
}

func (a *richApp) upload(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.uploads[id]
}

func (a *richApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.hits[r.URL.Path]++
	a.mu.Unlock()
	q := r.URL.Query()
	num := func(k string, def int) int {
		if n, err := strconv.Atoi(q.Get(k)); err == nil {
			return n
		}
		return def
	}
	flush := func() { http.NewResponseController(w).Flush() }
	switch r.URL.Path {
	case "/stream": // n pieces of size bytes, every ms apart, chunked
		for i := range num("n", 10) {
			if i > 0 {
				time.Sleep(time.Duration(num("every", 100)) * time.Millisecond)
			}
			w.Write(bytes.Repeat([]byte{'a' + byte(i%26)}, num("size", 1000)))
			flush()
		}
	case "/stall": // some bytes, then silence until released
		w.Write(bytes.Repeat([]byte("s"), 4000))
		flush()
		<-a.release
	case "/big": // size bytes of pattern, with ranges and a strong ETag
		if r.Header.Get("Range") != "" {
			a.mu.Lock()
			a.hits["/big range"]++
			a.mu.Unlock()
		}
		size := int64(num("size", 1<<20))
		w.Header().Set("ETag", `"pattern-`+strconv.FormatInt(size, 10)+`"`)
		w.Header().Set("Content-Type", "application/octet-stream")
		var rs io.ReadSeeker = &patternFile{size: size}
		if ms := num("slow", 0); ms > 0 {
			rs = &slowSeeker{ReadSeeker: rs, every: time.Duration(ms) * time.Millisecond}
		}
		http.ServeContent(w, r, "", time.Time{}, rs)
	case "/hints": // 103 and 102, then the answer
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusProcessing)
		w.Header().Del("Link")
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "made")
	case "/sse": // five events, which a cache would love, each written once the reader has the one before
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "max-age=60")
		for i := range 5 {
			fmt.Fprintf(w, "data: event %d at %d\n\n", i, time.Now().UnixMilli())
			flush()
			if i == 4 {
				break
			}
			select {
			case <-a.sseSeen:
			case <-time.After(sseWait): // held back on the way: counted
				a.mu.Lock()
				a.sseHeld++
				a.mu.Unlock()
			}
		}
	case "/switch": // a call answered 101, which it did not ask for (after acting)
		io.Copy(io.Discard, r.Body)
		a.mu.Lock()
		a.uploads[r.Header.Get("X-Delta-Request-Id")] = "acted"
		a.mu.Unlock()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: mine\r\nConnection: Upgrade\r\n\r\nwhatever")
			conn.Close()
		}
	case "/ws": // a WebSocket echo
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				select {
				case a.wsClosed <- time.Now():
				default:
				}
				return
			}
			if err := c.Write(context.Background(), typ, b); err != nil {
				return
			}
		}
	default: // a call that keeps what arrived: its size and digest
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got := fmt.Sprintf("%d %s", n, hex.EncodeToString(h.Sum(nil)))
		a.mu.Lock()
		a.uploads[r.Header.Get("X-Delta-Request-Id")] = got
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, got)
	}
}

// slowSeeker sleeps every for each 256 KiB read: a big answer that takes
// a while.
type slowSeeker struct {
	io.ReadSeeker
	every time.Duration
	n     int
}

func (s *slowSeeker) Read(p []byte) (int, error) {
	if s.n >= 256<<10 {
		time.Sleep(s.every)
		s.n = 0
	}
	n, err := s.ReadSeeker.Read(p[:min(len(p), 256<<10-s.n)])
	s.n += n
	return n, err
}

// richPair starts laptop and studio as processes with a richApp as
// studio's "notes".
func richPair(t *testing.T) (laptop, studio *proc, app *richApp) {
	t.Helper()
	laptop, studio = twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app = startRichApp(t)
	studio.register(t, "notes", app.URL)
	return laptop, studio, app
}

// base is p's URL for app notes on studio.
func (p *proc) notes() string { return p.c.URL + "/v1/peers/studio/notes" }

// localReq is a request to p's local API, with its token.
func (p *proc) localReq(t *testing.T, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, p.c.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	return req
}

// curl runs curl with the local token; it returns stdout, stderr and the
// exit code.
func (p *proc) curl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt-get install curl)")
	}
	cmd := exec.Command("curl", append([]string{"-sS", "-H", "Authorization: Bearer " + p.c.Token}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// TestReadTimeoutBoundsHeadOnly: X-Delta-Timeout bounds the wait for the
// head, never the body (DESIGN §2c): a chunked answer that outlives it
// while it flows arrives whole (curl, delta get, the kit); one whose owner
// falls silent mid-body for three times the timeout is still open for each
// client, nothing cut and no road dropped, and arrives whole when the
// owner goes on.
func TestReadTimeoutBoundsHeadOnly(t *testing.T) {
	laptop, _, app := richPair(t)
	flowing := "/stream?n=25&every=100&size=1000" // 2.4 s, against a 1 s timeout
	want := 25 * 1000

	out, errOut, code := laptop.curl(t, "-H", "X-Delta-Timeout: 1", laptop.notes()+flowing)
	if code != 0 || len(out) != want {
		t.Errorf("curl of a flowing stream: exit %d, %d bytes of %d: %s", code, len(out), want, errOut)
	}
	out, errOut, code = delta(t, "--state-dir", laptop.dir, "get", "studio", "notes", flowing, "--timeout", "1")
	if code != cli.ExitOK || len(out) != want {
		t.Errorf("delta get of a flowing stream: exit %d, %d bytes: %s", code, len(out), errOut)
	}
	kc, err := kit.Open(laptop.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ans, err := kc.Get(context.Background(), "studio", "notes", flowing, &kit.ReadOptions{Timeout: time.Second})
	if err != nil || len(ans.Body) != want {
		t.Errorf("kit.Get of a flowing stream: %v", err)
	}

	// A silence mid-body three times the timeout: each client still
	// waits, and has the answer whole once the owner goes on.
	type got struct {
		who  string
		n    int
		code int
		err  error
	}
	done := make(chan got, 3)
	go func() {
		out, _, code := laptop.curl(t, "-H", "X-Delta-Timeout: 1", laptop.notes()+"/stall")
		done <- got{"curl", len(out), code, nil}
	}()
	go func() {
		out, _, code := delta(t, "--state-dir", laptop.dir, "get", "studio", "notes", "/stall", "--timeout", "1")
		done <- got{"delta get", len(out), code, nil}
	}()
	go func() {
		ans, err := kc.Get(context.Background(), "studio", "notes", "/stall", &kit.ReadOptions{Timeout: time.Second})
		n := 0
		if ans != nil {
			n = len(ans.Body)
		}
		done <- got{"kit.Get", n, 0, err}
	}()
	gatewaytest.WaitFor(t, 30*time.Second, "the three reads of /stall to reach the app", func() bool { return app.hitsOf("/stall") >= 3 })
	select {
	case g := <-done:
		t.Fatalf("%s ended while the owner was silent mid-body: %+v", g.who, g)
	case <-time.After(3 * time.Second): // the silence: three times the timeout
	}
	app.Release()
	for range 3 {
		g := <-done
		if g.n != 4000 || g.code != 0 || g.err != nil {
			t.Errorf("%s after the silence: %d bytes, exit %d, %v; want the 4000 bytes whole", g.who, g.n, g.code, g.err)
		}
	}
	if m := laptop.metrics(t); strings.Contains(m, "delta_answers_cut_read_total") {
		t.Errorf("a quiet answer was cut:\n%s", grepLines(m, "cut"))
	}
	laptop.noDrops(t)
}

func (p *proc) metrics(t *testing.T) string {
	t.Helper()
	return string(p.c.Must(t, "GET", "/metrics", nil).Body)
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestExpectAndInterim: curl's own Expect: 100-continue on a 2 MiB body is
// answered 201 and carried out once; a small body with Expect too; 103
// and 102 before a call's 201 leave the app told 201 and the record
// saying 201; a read passes 103 on.
func TestExpectAndInterim(t *testing.T) {
	laptop, _, app := richPair(t)
	file := filepath.Join(t.TempDir(), "two-mib")
	body := bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16)
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	want := fmt.Sprintf("%d %s", len(body), hex.EncodeToString(sum[:]))
	out, errOut, code := laptop.curl(t, "-v", "-H", "X-Delta-Request-Id: expect-big", "--data-binary", "@"+file, laptop.notes()+"/upload")
	if code != 0 || out != want || !strings.Contains(errOut, "Expect: 100-continue") || !strings.Contains(errOut, "< HTTP/1.1 201") {
		t.Fatalf("curl --data-binary @2MiB: exit %d, %q\n%s", code, out, errOut)
	}
	if got := app.upload("expect-big"); got != want || app.hitsOf("/upload") != 1 {
		t.Errorf("the owner app got %q over %d requests", got, app.hitsOf("/upload"))
	}
	// Refused before any of the body is sent: no 100 Continue for an
	// unknown peer, nor for another request under a used id.
	other := filepath.Join(t.TempDir(), "three-mib")
	if err := os.WriteFile(other, bytes.Repeat([]byte("z"), 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, id, status string }{
		{laptop.c.URL + "/v1/peers/nowhere/notes/x", "expect-nowhere", "404"},
		{laptop.notes() + "/upload", "expect-big", "409"},
	} {
		_, errOut, _ := laptop.curl(t, "-v", "-H", "X-Delta-Request-Id: "+tc.id, "--data-binary", "@"+other, tc.url)
		if !strings.Contains(errOut, "< HTTP/1.1 "+tc.status) || strings.Contains(errOut, "100 Continue") {
			t.Errorf("%s: want %s before the body, without 100 Continue:\n%s", tc.id, tc.status, grepLines(errOut, "HTTP/1.1"))
		}
	}
	out, errOut, code = laptop.curl(t, "-v", "-H", "Expect: 100-continue", "-H", "X-Delta-Request-Id: expect-small", "--data-binary", "tiny", laptop.notes()+"/upload2")
	if code != 0 || !strings.HasPrefix(out, "4 ") || !strings.Contains(errOut, "< HTTP/1.1 201") {
		t.Errorf("a small body with Expect: exit %d, %q\n%s", code, out, errOut)
	}

	// Interim answers on a call.
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hints", []byte("x"), "X-Delta-Request-Id", "hints-1")
	if r.Status != 201 || string(r.Body) != "made" || r.Outcome() != "answered" {
		t.Fatalf("a call answered 103, 102, 201: %d %q %q", r.Status, r.Outcome(), r.Body)
	}
	call := laptop.c.GetCall(t, "hints-1", 0)
	if call.State != "answered" || call.Answer == nil || call.Answer.Status != 201 {
		t.Errorf("the record says %s with %+v", call.State, call.Answer)
	}
	// A repeat replays 201, not an interim answer.
	r = laptop.c.Must(t, "POST", "/v1/peers/studio/notes/hints", []byte("x"), "X-Delta-Request-Id", "hints-1")
	if r.Status != 201 || r.Header.Get("X-Delta-Replayed") != "true" {
		t.Errorf("replay: %d replayed=%q", r.Status, r.Header.Get("X-Delta-Replayed"))
	}

	// A read passes 103 on to Go's client.
	var early []int
	var link string
	req := laptop.localReq(t, "GET", "/v1/peers/studio/notes/hints", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		early = append(early, code)
		link = h.Get("Link")
		return nil
	}}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(b) != "made" || len(early) != 1 || early[0] != 103 || link == "" {
		t.Errorf("a read with 103: %d %q, interim %v (Link %q)", resp.StatusCode, b, early, link)
	}
}

// TestEventStream: each event reaches the reader before the next is
// written (the app writes the next only when the reader has the one
// before), and never from the cache, max-age or not.
func TestEventStream(t *testing.T) {
	laptop, _, app := richPair(t)
	for round := 1; round <= 2; round++ {
		resp, err := http.DefaultClient.Do(laptop.localReq(t, "GET", "/v1/peers/studio/notes/sse", nil))
		if err != nil {
			t.Fatal(err)
		}
		if o := resp.Header.Get("X-Delta-Outcome"); o != "answered" || resp.Header.Get("Age") != "" {
			t.Errorf("round %d: outcome %q, Age %q", round, o, resp.Header.Get("Age"))
		}
		br := bufio.NewReader(resp.Body)
		var lags []time.Duration
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			var i int
			var sent int64
			if _, err := fmt.Sscanf(line, "data: event %d at %d", &i, &sent); err == nil {
				lags = append(lags, time.Since(time.UnixMilli(sent)))
				if i < 4 { // the app waits for the first four
					app.sseSeen <- i
				}
			}
		}
		resp.Body.Close()
		if len(lags) != 5 {
			t.Fatalf("round %d: %d events", round, len(lags))
		}
		app.mu.Lock()
		held := app.sseHeld
		app.mu.Unlock()
		if held != 0 {
			t.Errorf("round %d: %d events did not reach the reader until the app wrote more (it waited %s for each)", round, held, sseWait)
		}
		t.Logf("round %d: events arrived %v after they were sent", round, lags)
	}
	if n := app.hitsOf("/sse"); n != 2 {
		t.Errorf("the owner app served the stream %d times for two reads: a cache answered", n)
	}
}

// TestWebSocket: an echo through two Deltas, counted while open.
func TestWebSocket(t *testing.T) {
	laptop, studio, _ := richPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := strings.Replace(laptop.notes(), "http://", "ws://", 1) + "/ws"
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + laptop.c.Token}}})
	if err != nil {
		t.Fatalf("dial through Delta: %v (%+v)", err, resp)
	}
	defer c.CloseNow()
	if o := resp.Header.Get("X-Delta-Outcome"); o != "answered" || resp.Header.Get("X-Delta-Route") != "lan" {
		t.Errorf("101 with outcome %q via %q", o, resp.Header.Get("X-Delta-Route"))
	}
	for i := range 20 {
		msg := strings.Repeat("x", 1+i*1000)
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil || string(got) != msg {
			t.Fatalf("echo %d: %d bytes, %v", i, len(got), err)
		}
	}
	for _, p := range []*proc{laptop, studio} {
		if s := p.status(t); s.Sessions != 1 {
			t.Errorf("%s counts %d sessions open, want 1", p.name, s.Sessions)
		}
	}
	// An upgrade the owner app declines is its answer, Delta's outcome on
	// it (both Deltas once let it through without).
	req := laptop.localReq(t, "GET", "/v1/peers/studio/notes/no-upgrade-here", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 || resp.Header.Get("X-Delta-Outcome") != "answered" {
		t.Errorf("a declined upgrade: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	c.Close(websocket.StatusNormalClosure, "done")
	for _, p := range []*proc{laptop, studio} {
		gatewaytest.WaitFor(t, 10*time.Second, p.name+"'s session closed", func() bool { return p.status(t).Sessions == 0 })
	}
}

// TestBigCallAndRead: a 1 GiB call whose owner app gets it whole, a 1 GiB
// read whose reader gets it whole, with each Delta's memory under 200 MB
// throughout, and `delta get` of the 1 GiB answer under 100 MB.
func TestBigCallAndRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads each Delta's memory from /proc (Linux)")
	}
	laptop, studio, app := richPair(t)
	const size = 1 << 30
	watch := watchRSS(t, laptop, studio)

	// The call, from a file of 1 GiB written for it (sparse: the file
	// system holds little).
	file := filepath.Join(t.TempDir(), "one-gib")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, &patternFile{size: size}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := fmt.Sprintf("%d %s", size, patternSum(size))
	start := time.Now()
	out, errOut, code := delta(t, "--state-dir", laptop.dir, "call", "studio", "notes", "/backup", "--data", "@"+file, "--id", "big-call", "--timeout", "60")
	os.Remove(file)
	if code != cli.ExitOK || out != want {
		t.Fatalf("delta call of 1 GiB: exit %d, %q (want %q)\n%s", code, out, want, errOut)
	}
	t.Logf("a 1 GiB call through two Deltas: %v", time.Since(start))
	if got := app.upload("big-call"); got != want {
		t.Errorf("the owner app got %q", got)
	}
	// Its digest, summed once (by studio as it spooled the body) and
	// recorded here from studio's reply, is the call's.
	dh := proto.NewDigest("POST", "notes", "/backup")
	io.Copy(dh, &patternFile{size: size})
	call := laptop.c.GetCall(t, "big-call", 0)
	if call.State != "answered" || call.Digest != proto.DigestOf(dh) {
		t.Errorf("the call is %s with digest %q, want %q", call.State, call.Digest, proto.DigestOf(dh))
	}

	// The read, by `delta get`, its stdout summed as it arrives.
	start = time.Now()
	cmd := exec.Command(bin, "--state-dir", laptop.dir, "get", "studio", "notes", "/big?size="+strconv.Itoa(size))
	h := sha256.New()
	var n countWriter
	cmd.Stdout = io.MultiWriter(h, &n)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Its memory sampled while it runs: its rusage's peak would hold this
	// test process's own, which Linux carries into a child across exec.
	getRSS := watchRSS(t, &proc{name: "delta get", cmd: cmd})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("delta get of 1 GiB: %v: %s", err, e.String())
	}
	t.Logf("a 1 GiB read through two Deltas: %v", time.Since(start))
	if got := hex.EncodeToString(h.Sum(nil)); int64(n) != size || got != patternSum(size) {
		t.Errorf("delta get: %d bytes, sum %s", n, got)
	}
	if rss := getRSS()["delta get"]; rss > 100<<20 {
		t.Errorf("delta get of 1 GiB took %d MB of memory, want under 100", rss>>20)
	} else {
		t.Logf("delta get of 1 GiB: peak RSS %.1f MB", float64(rss)/(1<<20))
	}
	for name, peak := range watch() {
		if peak > 200<<20 {
			t.Errorf("%s's memory reached %d MB, want under 200", name, peak>>20)
		}
		t.Logf("%s's peak RSS: %.1f MB", name, float64(peak)/(1<<20))
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// watchRSS samples each process's resident memory until the returned
// function is called, which returns the peak of each.
func watchRSS(t *testing.T, ps ...*proc) func() map[string]int64 {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan map[string]int64, 1)
	go func() {
		peak := map[string]int64{}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, p := range ps {
				if rss := procmem.RSS(p.cmd.Process.Pid); rss > peak[p.name] {
					peak[p.name] = rss
				}
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var out map[string]int64
	t.Cleanup(func() { once.Do(func() { close(stop); out = <-done }) })
	return func() map[string]int64 {
		once.Do(func() { close(stop); out = <-done })
		return out
	}
}

// TestCutUpload: an upload whose app goes away half-way is never seen by
// the owner app, and the call settles not_carried_out; so does one whose
// caller's Delta is killed half-way.
func TestCutUpload(t *testing.T) {
	laptop, studio, app := richPair(t)
	for _, how := range []string{"the app goes away", "the caller's Delta is killed"} {
		id := "cut-" + strings.ReplaceAll(how, " ", "-")
		id = strings.ReplaceAll(id, "'", "")
		conn, err := net.Dial("tcp", strings.TrimPrefix(laptop.c.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/peers/studio/notes/cut HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nX-Delta-Request-Id: %s\r\nContent-Length: %d\r\n\r\n", laptop.c.Token, id, 64<<20)
		half := bytes.Repeat([]byte("h"), 32<<20)
		if _, err := conn.Write(half); err != nil {
			t.Fatal(err)
		}
		// The call is under way once the caller has it recorded as sending,
		// and the owner's receipt is made at its head, before its body is
		// whole: asked meanwhile, the owner says running.
		gatewaytest.WaitFor(t, 30*time.Second, id+" sending", func() bool {
			r, err := laptop.c.Do("GET", "/v1/calls/"+id, nil)
			return err == nil && r.Status == 200 && strings.Contains(string(r.Body), `"sending"`)
		})
		gatewaytest.WaitFor(t, 30*time.Second, id+" running at the owner", func() bool {
			r, err := studio.c.Do("GET", "/v1/receipts?state=running", nil)
			return err == nil && strings.Contains(string(r.Body), id)
		})
		cutAndSettle(t, laptop, conn, how, id)
		if app.upload(id) != "" || app.hitsOf("/cut") != 0 {
			t.Errorf("%s: the owner app saw the call (%q)", how, app.upload(id))
		}
	}
}

// cutAndSettle cuts a call's upload under way on conn, as how says ("the
// caller's Delta is killed": laptop is SIGKILLed and started again; else
// its app hangs up, with a reset), and checks that the call settles
// not_carried_out.
func cutAndSettle(t *testing.T, laptop *proc, conn net.Conn, how, id string) {
	t.Helper()
	if how == "the caller's Delta is killed" {
		laptop.kill(t)
		conn.Close()
		laptop.start(t)
	} else {
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
	call := laptop.c.GetCall(t, id, 60)
	for call.State == "unknown" {
		call = laptop.c.GetCall(t, id, 60)
	}
	if call.State != "not_carried_out" {
		t.Errorf("%s: the call settled %s (%s), want not_carried_out", how, call.State, call.Detail)
	}
}

// TestNamesAndMethods: percent-encoded names are the names they spell,
// with the path after them carried exactly; CONNECT, TRACE and OPTIONS *
// are refused by Delta (405, its own outcome); OPTIONS on a path is a
// read, and so is PROPFIND (a safe method, its body carried); MKCOL is a
// call.
func TestNamesAndMethods(t *testing.T) {
	laptop, _, app := richPair(t)
	out, errOut, code := laptop.curl(t, "-H", "X-Delta-Request-Id: pct-1", "--data-binary", "x", laptop.c.URL+"/v1/peers/stu%64io/n%6Ftes/path%2Fwith?q=1")
	if code != 0 || !strings.HasPrefix(out, "1 ") || app.upload("pct-1") == "" {
		t.Errorf("a call to stu%%64io/n%%6Ftes: exit %d %q %s", code, out, errOut)
	}
	out, _, _ = laptop.curl(t, "-o", "/dev/null", "-w", "%{http_code}", laptop.c.URL+"/v1/peers/stu%2Fdio/notes/x")
	if out != "400" {
		t.Errorf("a peer name with an escaped slash: %s", out)
	}
	for _, args := range [][]string{
		{"-X", "TRACE", laptop.notes() + "/x"},
		{"-X", "CONNECT", laptop.notes() + "/x"},
		{"-X", "OPTIONS", "--request-target", "*", laptop.c.URL},
	} {
		out, errOut, code := laptop.curl(t, append([]string{"-i"}, args...)...)
		if code != 0 || !strings.Contains(out, "405") || !strings.Contains(strings.ToLower(out), "x-delta-outcome: bad_request") {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	// Without the token, OPTIONS * is refused by the guard first.
	cmd := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "OPTIONS", "--request-target", "*", laptop.c.URL)
	if b, _ := cmd.Output(); string(b) != "401" {
		t.Errorf("OPTIONS * without the token: %s", b)
	}
	r := laptop.c.Must(t, "OPTIONS", "/v1/peers/studio/notes/opts", nil)
	if r.Outcome() != "answered" || app.hitsOf("/opts") != 1 {
		t.Errorf("OPTIONS on a path: %d %q", r.Status, r.Outcome())
	}
	r = laptop.c.Must(t, "PROPFIND", "/v1/peers/studio/notes/dav", []byte("<x/>"), "X-Delta-Request-Id", "propfind-1")
	if r.Outcome() != "answered" || app.hitsOf("/dav") != 1 {
		t.Errorf("PROPFIND: %d %q", r.Status, r.Outcome())
	}
	if r := laptop.c.Must(t, "GET", "/v1/calls/propfind-1", nil); r.Status != 404 {
		t.Errorf("PROPFIND was journaled: %d %s", r.Status, r.Body)
	}
	r = laptop.c.Must(t, "MKCOL", "/v1/peers/studio/notes/dav2", nil, "X-Delta-Request-Id", "mkcol-1")
	if r.Status != 201 || laptop.c.GetCall(t, "mkcol-1", 0).Method != "MKCOL" {
		t.Errorf("MKCOL: %d %q", r.Status, r.Outcome())
	}
}

// TestPythonClient: Python's http.client, another real client, reads and
// calls through Delta.
func TestPythonClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	laptop, _, _ := richPair(t)
	host := strings.TrimPrefix(laptop.c.URL, "http://")
	script := `
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1])
h = {"Authorization": "Bearer " + sys.argv[2]}
c.request("GET", "/v1/peers/studio/notes/stream?n=3&every=10&size=5", headers=h)
r = c.getresponse(); b = r.read()
print(r.status, r.getheader("X-Delta-Outcome"), len(b))
c = http.client.HTTPConnection(sys.argv[1])
h["X-Delta-Request-Id"] = "py-1"
c.request("PUT", "/v1/peers/studio/notes/py", body=b"x" * 3000000, headers=h)
r = c.getresponse(); b = r.read()
print(r.status, r.getheader("X-Delta-Outcome"), b.decode().split()[0])
`
	out, err := exec.Command(py, "-c", script, host, laptop.c.Token).CombinedOutput()
	if err != nil || string(out) != "200 answered 15\n201 answered 3000000\n" {
		t.Errorf("python: %v\n%s", err, out)
	}
}

// TestTransfersVisible: a read that runs for more than a second is listed
// in /v1/status with its road, bytes and rate, and the kit reports its
// progress as it arrives.
func TestTransfersVisible(t *testing.T) {
	laptop, _, _ := richPair(t)
	kc, err := kit.Open(laptop.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	const size = 16 << 20 // at 256 KiB every 50 ms: about 3 s
	var last atomic.Int64
	r, err := kc.Stream(context.Background(), "studio", "notes", "/big?slow=50&size="+strconv.Itoa(size), &kit.ReadOptions{Progress: func(done, total int64) {
		if total != size {
			t.Errorf("progress says the total is %d", total)
		}
		last.Store(done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	go io.Copy(io.Discard, r.Body)
	gatewaytest.WaitFor(t, 10*time.Second, "the read listed as a transfer", func() bool {
		for _, x := range laptop.status(t).Transfers {
			if x.Kind == "read" && x.Peer == "studio" && x.Road == "lan" && x.Received > 0 && x.Rate > 0 {
				return true
			}
		}
		return false
	})
	gatewaytest.WaitFor(t, 30*time.Second, "the read done", func() bool { return last.Load() == size })
	gatewaytest.WaitFor(t, 10*time.Second, "the transfer gone from status", func() bool { return len(laptop.status(t).Transfers) == 0 })
}

// TestUnaskedSwitch: an owner app that answers 101 to a call that asked
// for no upgrade broke HTTP after it may have acted: the app is told the
// outcome is unknown, and the call settles as needing a person.
func TestUnaskedSwitch(t *testing.T) {
	laptop, _, app := richPair(t)
	r := laptop.c.Must(t, "POST", "/v1/peers/studio/notes/switch", []byte("x"), "X-Delta-Request-Id", "switch-1")
	if r.Status != 502 || r.Outcome() != "outcome_unknown" {
		t.Fatalf("a call answered 101: %d %q %s", r.Status, r.Outcome(), r.Body)
	}
	c := laptop.c.GetCall(t, "switch-1", 60)
	if c.State != "needs_person" || c.OwnerState != "app_unknown" || app.upload("switch-1") != "acted" {
		t.Errorf("settled %s (owner %q: %s)", c.State, c.OwnerState, c.Detail)
	}
}
