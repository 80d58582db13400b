package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// Real software from Debian, used as it is, through two Deltas run as
// processes (DESIGN §2b): restic against rclone's restic server, rclone's
// WebDAV client against its WebDAV server, an aiohttp WebSocket server,
// and a web app with a login cookie and redirects in Chromium; each
// through a forward made by `delta forward`, and restic also through
// Basic auth on /v1/peers/…. Each job is timed direct and through the
// forward (the log's ANYAPP lines; never asserted: docs/benchmarks.md).

// need skips t unless the programs are installed, naming the packages.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (Debian package %s; `make test` installs it when root)", p, p)
		}
	}
}

// serve runs a server program as a process of the test, ended (SIGKILL)
// when the test ends, and waits until addr takes connections.
func serve(t *testing.T, addr string, argv ...string) { serveEnv(t, addr, nil, argv...) }

// serveEnv is serve with env added to the program's environment.
func serveEnv(t *testing.T, addr string, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var log gatewaytest.LogBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", argv[0], log.String())
		}
	})
	gatewaytest.WaitFor(t, 30*time.Second, argv[0]+" listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// runJob runs a client program and fails the test if it fails; it returns
// its output and how long it took.
func runJob(t *testing.T, env []string, argv ...string) (string, time.Duration) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	return out.String(), took
}

// forwardURL opens laptop's forward to studio's app with delta forward,
// as a person would, and returns the URL it printed.
func forwardURL(t *testing.T, laptop *proc, app string) string {
	t.Helper()
	u, _ := forwardURLs(t, laptop, app)
	return u
}

// forwardURLs opens a forward to studio's app and returns its URL and its
// URL for a browser (its own name, as delta forward prints it).
func forwardURLs(t *testing.T, laptop *proc, app string) (u, browser string) {
	t.Helper()
	out, errOut, code := delta(t, "--state-dir", laptop.dir, "forward", "studio/"+app)
	u = strings.TrimSpace(out)
	if code != cli.ExitOK || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/") {
		t.Fatalf("delta forward studio/%s: exit %d, %q %s", app, code, out, errOut)
	}
	if _, rest, ok := strings.Cut(errOut, "in a browser: "); ok {
		browser, _, _ = strings.Cut(rest, " ")
	}
	return u, browser
}

// ratio logs a job's time direct and through Delta.
func ratio(t *testing.T, job string, direct, through time.Duration) {
	t.Logf("ANYAPP %s: direct %v, through a forward %v (%.2f×)", job, direct.Round(time.Millisecond), through.Round(time.Millisecond),
		float64(through)/float64(direct))
}

// anyAppFiles writes n files of random bytes (size bytes in all) under
// dir, and returns their SHA-256 by name.
func anyAppFiles(t *testing.T, dir string, n, size int) map[string]string {
	t.Helper()
	sums := map[string]string{}
	rng := rand.NewChaCha8([32]byte{1})
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("file-%03d.bin", i))
		os.MkdirAll(filepath.Dir(name), 0o755)
		b := make([]byte, size/n)
		rng.Read(b)
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		sums[strings.TrimPrefix(name, dir)] = hex.EncodeToString(s[:])
	}
	return sums
}

// anyAppBytes is how much each job moves: DELTA_ANYAPP_MB, or 8 MiB.
func anyAppBytes() int {
	if n, err := strconv.Atoi(os.Getenv("DELTA_ANYAPP_MB")); err == nil && n > 0 {
		return n << 20
	}
	return 8 << 20
}

func TestAnyAppRestic(t *testing.T) {
	need(t, "restic", "rclone")
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	src := t.TempDir()
	sums := anyAppFiles(t, src, 40, anyAppBytes())

	repoJob := func(repo string) time.Duration {
		env := []string{"RESTIC_PASSWORD=anyapp", "RESTIC_CACHE_DIR=" + t.TempDir()}
		var took time.Duration
		for _, args := range [][]string{{"init"}, {"backup", src}, {"check", "--read-data"}} {
			_, d := runJob(t, env, append([]string{"restic", "-r", repo}, args...)...)
			took += d
		}
		dst := t.TempDir()
		_, d := runJob(t, env, "restic", "-r", repo, "restore", "latest", "--target", dst)
		for name, want := range sums {
			b, err := os.ReadFile(filepath.Join(dst, src, name))
			got := sha256.Sum256(b)
			if err != nil || hex.EncodeToString(got[:]) != want {
				t.Fatalf("restored %s: %v, SHA-256 %x, want %s", name, err, got, want)
			}
		}
		return took + d
	}

	directAddr := freeAddr(t)
	serve(t, directAddr, "rclone", "serve", "restic", t.TempDir(), "--addr", directAddr)
	direct := repoJob("rest:http://" + directAddr + "/")

	addr := freeAddr(t)
	serve(t, addr, "rclone", "serve", "restic", t.TempDir(), "--addr", addr)
	studio.register(t, "restic", "http://"+addr)
	through := repoJob("rest:" + forwardURL(t, laptop, "restic"))
	ratio(t, fmt.Sprintf("restic init, backup, check --read-data, restore of %d MiB", anyAppBytes()>>20), direct, through)

	// The same through the local API, with the token as a Basic
	// password, as restic can send it.
	addr2 := freeAddr(t)
	serve(t, addr2, "rclone", "serve", "restic", t.TempDir(), "--addr", addr2)
	studio.register(t, "restic2", "http://"+addr2)
	u := strings.Replace(laptop.c.URL, "http://", "http://delta:"+laptop.c.Token+"@", 1)
	repoJob("rest:" + u + "/v1/peers/studio/restic2/")
}

func TestAnyAppWebDAV(t *testing.T) {
	need(t, "rclone")
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	src := t.TempDir()
	anyAppFiles(t, src, 60, anyAppBytes())

	job := func(u string) time.Duration {
		r := []string{"--config", "/dev/null", "--webdav-url", u}
		rc := func(args ...string) (string, time.Duration) {
			return runJob(t, nil, append(append([]string{"rclone"}, args...), r...)...)
		}
		var took time.Duration
		_, d := rc("copy", src, ":webdav:tree")
		took += d
		out, d := rc("check", src, ":webdav:tree")
		took += d
		if !strings.Contains(out, "60 matching files") {
			t.Errorf("rclone check: %s", out)
		}
		out, d = rc("lsjson", "-R", ":webdav:tree")
		took += d
		if strings.Count(out, `"IsDir":false`) != 60 {
			t.Errorf("rclone lsjson lists %d files, want 60:\n%s", strings.Count(out, `"IsDir":false`), out)
		}
		_, d = rc("moveto", ":webdav:tree/d0/file-000.bin", ":webdav:tree/moved.bin")
		took += d
		_, d = rc("copyto", ":webdav:tree/d1/file-001.bin", ":webdav:tree/copied.bin")
		took += d
		out, d = rc("lsf", ":webdav:tree")
		took += d
		if !strings.Contains(out, "moved.bin") || !strings.Contains(out, "copied.bin") {
			t.Errorf("after moveto and copyto: %s", out)
		}
		return took
	}
	directAddr := freeAddr(t)
	directRoot := t.TempDir()
	serve(t, directAddr, "rclone", "serve", "webdav", directRoot, "--addr", directAddr)
	direct := job("http://" + directAddr + "/")

	addr := freeAddr(t)
	root := t.TempDir()
	serve(t, addr, "rclone", "serve", "webdav", root, "--addr", addr)
	studio.register(t, "dav", "http://"+addr)
	through := job(forwardURL(t, laptop, "dav"))
	ratio(t, fmt.Sprintf("rclone webdav copy, check, lsjson, moveto, copyto of %d MiB in 60 files", anyAppBytes()>>20), direct, through)
	for _, p := range []string{"tree/moved.bin", "tree/copied.bin", "tree/d1/file-001.bin"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("on studio: %v", err)
		}
	}
	// The listings, moves and copies were reads and calls as they are:
	// PROPFIND is never journaled.
	calls := string(laptop.c.Must(t, "GET", "/v1/calls?limit=5000", nil).Body)
	if strings.Contains(calls, `"method": "PROPFIND"`) || !strings.Contains(calls, `"method": "MOVE"`) || !strings.Contains(calls, `"method": "COPY"`) {
		t.Errorf("the journal's calls: PROPFIND %v, MOVE %v, COPY %v", strings.Contains(calls, `"method": "PROPFIND"`),
			strings.Contains(calls, `"method": "MOVE"`), strings.Contains(calls, `"method": "COPY"`))
	}
}

// pythonAiohttp is Debian's python3 with aiohttp, or a skip.
func pythonAiohttp(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import aiohttp").Run(); err != nil {
		t.Skip("python3-aiohttp is not installed for /usr/bin/python3 (Debian package python3-aiohttp; `make test` installs it when root)")
	}
	return py
}

// aiohttpPair starts laptop and studio, and on studio the aiohttp app
// (testdata/anyapp_server.py) registered as app; it returns laptop and
// the app's address.
func aiohttpPair(t *testing.T, py, app string) (*proc, string) {
	t.Helper()
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	addr := freeAddr(t)
	serve(t, addr, py, "testdata/anyapp_server.py", addr[strings.LastIndex(addr, ":")+1:])
	studio.register(t, app, "http://"+addr)
	return laptop, addr
}

func TestAnyAppAiohttpWebSocket(t *testing.T) {
	py := pythonAiohttp(t)
	laptop, addr := aiohttpPair(t, py, "aio")
	client := `
import asyncio, sys, aiohttp
async def main():
    async with aiohttp.ClientSession() as s:
        async with s.ws_connect(sys.argv[1] + "ws") as w:
            for i in range(200):
                await w.send_str("m%d" % i)
                m = await w.receive()
                assert m.data == "echo:m%d" % i, m
    print("ok")
asyncio.run(main())
`
	out, direct := runJob(t, nil, py, "-c", client, "http://"+addr+"/")
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("direct: %s", out)
	}
	out, through := runJob(t, nil, py, "-c", client, forwardURL(t, laptop, "aio"))
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("through a forward: %s", out)
	}
	ratio(t, "an aiohttp WebSocket session, 200 messages echoed", direct, through)
}

// TestAnyAppInBrowser: a web app with a login cookie and redirects works
// in Chromium through a forward (sent on to the forward's own name, where
// its cookies are its own), and a page of another site that posts a form
// to the forward is refused: nothing reaches the peer.
func TestAnyAppInBrowser(t *testing.T) {
	py := pythonAiohttp(t)
	ctx := browser(t)
	laptop, addr := aiohttpPair(t, py, "web")
	u, own := forwardURLs(t, laptop, "web")
	fport := strings.TrimSuffix(u[strings.LastIndex(u, ":")+1:], "/")
	if !strings.HasPrefix(own, "http://web.studio.") || !strings.HasSuffix(own, ".localhost:"+fport+"/") {
		t.Fatalf("the forward's own name: %q", own)
	}

	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "logged in")]`))); err != nil {
		t.Fatalf("the login through the forward: %v", err)
	}
	text, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
	loc, _ := chromedp.Run(tctx, chromedp.Location())
	if host := strings.TrimSuffix(strings.TrimPrefix(own, "http://"), "/"); loc != own || !strings.Contains(text, "host "+host) {
		t.Errorf("after the login the browser is at %s, showing %q; want %s, and the app seeing that host", loc, text, own)
	}

	// Another site's page posts a form to the forward (a simple POST,
	// no preflight): refused, and nothing reaches studio.
	effects := func() string {
		r, err := http.Get("http://" + addr + "/effects")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%spost"><input name="x" value="1"></form>
<script>document.forms[0].submit()</script>`, u)
	}))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) // another site than 127.0.0.1
	if err := chromedp.Do(tctx, chromedp.Navigate(evilURL), chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "forbidden")]`))); err != nil {
		t.Fatalf("the cross-site post: %v", err)
	}
	text, _ = chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
	if !strings.Contains(text, "another site") || !strings.Contains(text, "nothing was sent") {
		t.Errorf("the refusal: %s", text)
	}
	if got := effects(); got != "0" {
		t.Errorf("the app took %s posts from another site", got)
	}
	if calls := string(laptop.c.Must(t, "GET", "/v1/calls", nil).Body); strings.Contains(calls, "/post") {
		t.Errorf("a refused post was journaled: %s", calls)
	}
}

// TestForwardCookiesStayItsOwn: browsers keep cookies per host name, not
// per port, and let a page set one for a parent domain. A forward's own
// name holds a random label (APP.PEER.LABEL.localhost, issue 63 D6 and
// D8), so in Chromium the app's login cookie reaches no listener on
// another port under the name forwards had before, and no cookie the app
// sets for a parent domain of its name (or for PEER.localhost) reaches
// the same peer's other forward.
func TestForwardCookiesStayItsOwn(t *testing.T) {
	py := pythonAiohttp(t)
	ctx := browser(t)
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	addr := freeAddr(t)
	serve(t, addr, py, "testdata/anyapp_server.py", addr[strings.LastIndex(addr, ":")+1:])
	studio.register(t, "web", "http://"+addr)
	studio.register(t, "other", "http://"+addr)
	webURL, web := forwardURLs(t, laptop, "web")
	_, other := forwardURLs(t, laptop, "other")
	webHost := strings.TrimSuffix(strings.TrimPrefix(web, "http://"), "/")
	webName, _, _ := strings.Cut(webHost, ":")
	if !strings.HasPrefix(webName, "web.studio.") || !strings.HasPrefix(other, "http://other.studio.") {
		t.Fatalf("the forwards' own names: %q, %q", web, other)
	}

	// A listener of someone else's on another port: it records the
	// cookies each request brings.
	var mu sync.Mutex
	var spied []string
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" { // not the browser's /favicon.ico
			mu.Lock()
			spied = append(spied, r.Host+" "+r.Header.Get("Cookie"))
			mu.Unlock()
		}
		io.WriteString(w, "<p>spy</p>")
	}))
	defer spy.Close()
	spyPort := spy.URL[strings.LastIndex(spy.URL, ":")+1:]

	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	show := func(u, text string) string {
		t.Helper()
		if err := chromedp.Do(tctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "`+text+`")]`))); err != nil {
			t.Fatalf("%s in Chromium: %v", u, err)
		}
		body, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		return body
	}
	show(webURL, "logged in") // the login cookie, HttpOnly, under the forward's own name
	// The app sets cookies for every parent domain a page may name: its
	// own name's parent, studio.localhost (under the name forwards had
	// before labels, the parent of every forward to studio), localhost.
	parents := map[string]string{"parent": webName[len("web."):], "peer": "studio.localhost", "all": "localhost"}
	for name, domain := range parents {
		show(web+"wide?name="+name+"&domain="+domain, "set "+name)
	}
	mine := show(web+"cookies", "cookies:")
	if !strings.Contains(mine, "sid=s3cret") || !strings.Contains(mine, "parent=1") {
		t.Errorf("the forward's own cookies did not come back to it: %q", mine)
	}
	t.Logf("the app's own name brings %q", mine)

	// The peer's other forward, under its own name.
	theirs := show(other+"cookies", "cookies:")
	for _, c := range []string{"sid=", "parent=", "peer="} {
		if strings.Contains(theirs, c) {
			t.Errorf("another forward to studio was sent the web app's cookie %s: %q", c, theirs)
		}
	}
	// The listener on another port, named as forwards were named before
	// labels, and as their peer.
	for _, h := range []string{"web.studio.localhost", "studio.localhost", webName} {
		show("http://"+h+":"+spyPort+"/", "spy")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(spied) != 3 {
		t.Fatalf("the listener saw %d requests, want 3: %q", len(spied), spied)
	}
	for _, s := range spied[:2] {
		if strings.Contains(s, "sid=") || strings.Contains(s, "parent=") || strings.Contains(s, "peer=") {
			t.Errorf("a listener on another port was sent the forward's cookies: %q", s)
		}
	}
	// Under the forward's own name, with its label, a listener on another
	// port would get them: browsers do not keep ports apart. The label
	// is what keeps that name from a page that does not know it.
	t.Logf("under the forward's own name, another port is sent %q", spied[2])
}

// TestForwardCommand: delta forward, --list and --remove, and what they
// say of bad input.
func TestForwardCommand(t *testing.T) {
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	S := []string{"--state-dir", laptop.dir}
	u := forwardURL(t, laptop, "notes")
	out, errOut, code := delta(t, append(S, "forward", "--list")...)
	if code != cli.ExitOK || !strings.Contains(out, "studio/notes\t"+u+"\thttp://notes.studio.") {
		t.Errorf("--list: exit %d %q %s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"forward", "studio"}, cli.ExitUsage, "is not PEER/APP"},
		{[]string{"forward", "studio/notes", "0.0.0.0:0"}, cli.ExitUsage, "not on a loopback address"},
		// Not found (12): a peer or forward this computer does not know.
		{[]string{"forward", "nowhere/notes"}, cli.ExitNotFound, `"nowhere" is not one of this computer's peers`},
		{[]string{"forward", "--remove", "studio/other"}, cli.ExitNotFound, "no such forward to studio/other"},
	} {
		out, errOut, code := delta(t, append(S, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("delta %s: exit %d, %q %q; want exit %d saying %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.says)
		}
	}
	if out, errOut, code := delta(t, append(S, "forward", "--remove", "studio/notes")...); code != cli.ExitOK || !strings.Contains(out, "removed the forward to studio/notes") {
		t.Errorf("--remove: exit %d %q %s", code, out, errOut)
	}
	if out, _, _ := delta(t, append(S, "forward", "--list")...); !strings.Contains(out, "no forwards") {
		t.Errorf("--list after --remove: %q", out)
	}
}
