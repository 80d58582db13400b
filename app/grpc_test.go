package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/delta-roads/delta/app/cli"
)

// gRPC and HTTP/2 through Delta (issue 67; docs/protocol.md §1c): real
// gRPC software (Debian's python3-grpcio) and curl with HTTP/2, through
// two Deltas run as processes and a forward made by `delta forward`,
// each check run directly first.

// pythonGRPC is Debian's python3 with grpcio, or a skip.
func pythonGRPC(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import grpc").Run(); err != nil {
		t.Skip("python3-grpcio is not installed for /usr/bin/python3 (Debian package python3-grpcio; `make test` installs it when root)")
	}
	return py
}

// grpcCheck runs testdata/grpc_client.py's check against target and
// fails t unless it printed "ok".
func grpcCheck(t *testing.T, py, target string, args ...string) string {
	t.Helper()
	out, _ := runJob(t, nil, append([]string{py, "testdata/grpc_client.py", target}, args...)...)
	if !strings.HasPrefix(strings.TrimSpace(out), "ok") {
		t.Fatalf("%s %v: %s", target, args, out)
	}
	return strings.TrimSpace(out)
}

// TestGRPC: unary (an 8 MiB message, metadata and trailing metadata both
// ways), server streaming that flows (the second message is sent only
// once the client has the first), client streaming, an app's own error
// status and a deadline, through a forward as directly; each call
// journaled, by its service and method's path; and a call that cannot
// leave (the owner's Delta stopped) reaches the client as UNAVAILABLE,
// the status its retry policies retry, with Delta's words.
func TestGRPC(t *testing.T) {
	py := pythonGRPC(t)
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	addr := freeAddr(t)
	serve(t, addr, py, "testdata/grpc_server.py", addr[strings.LastIndex(addr, ":")+1:])
	studio.register(t, "echo", "http://"+addr)
	fwd := strings.TrimSuffix(strings.TrimPrefix(forwardURL(t, laptop, "echo"), "http://"), "/")
	dir := t.TempDir()
	for _, check := range []string{"unary", "stream", "clientstream", "chat", "error", "deadline"} {
		grpcCheck(t, py, addr, check, dir)
		grpcCheck(t, py, fwd, check, dir)
	}
	r := laptop.c.Must(t, "GET", "/v1/calls?limit=50", nil)
	if !strings.Contains(string(r.Body), `"grpc": true`) {
		t.Errorf("the calls journal does not mark gRPC calls: %s", r.Body)
	}
	out, _, _ := delta(t, "--state-dir", laptop.dir, "calls")
	for _, m := range []string{"gRPC delta.test.Echo/Echo", "gRPC delta.test.Echo/Count", "gRPC delta.test.Echo/Sum", "gRPC delta.test.Echo/Chat"} {
		if !strings.Contains(out, m) {
			t.Errorf("delta calls lists no %s:\n%s", m, out)
		}
	}

	studio.kill(t)
	out = grpcCheck(t, py, fwd, "status", dir, "UNAVAILABLE", "nothing was sent", "grpc-refused-1")
	if !strings.Contains(out, "unavailable grpc-refused-1") {
		t.Errorf("a refused call's metadata: %s", out)
	}
}

// TestHTTP2ThroughForward: curl --http2-prior-knowledge GET and POST
// through a forward reach an HTTP/1.1 app (Delta carries them between the
// Deltas as it carries any request), and the answer comes back in
// HTTP/2. (A door that speaks HTTP/1.1 only answers HTTP/2's preface
// with a GOAWAY that says so: h1server's TestHTTP2Refused.)
func TestHTTP2ThroughForward(t *testing.T) {
	need(t, "curl")
	laptop, studio := twoProcs(t)
	studio.start(t)
	laptop.start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Proto+" "+r.Method+" "+r.URL.Path+" "+string(b))
	}))
	defer app.Close()
	studio.register(t, "web", app.URL)
	u := forwardURL(t, laptop, "web")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{u + "notes/1"}, "HTTP/1.1 GET /notes/1 "},
		{[]string{"--data-binary", "hello", u + "notes"}, "HTTP/1.1 POST /notes hello"},
	} {
		args := append([]string{"-sS", "--http2-prior-knowledge", "-w", "\n%{http_version} %{http_code}"}, tc.args...)
		out, _ := runJob(t, nil, append([]string{"curl"}, args...)...)
		if want := tc.want + "\n2 200"; out != want {
			t.Errorf("curl %v: %q, want %q", tc.args, out, want)
		}
	}

	// An app that speaks HTTP/2 only (h2c), registered with --h2c: its
	// Delta speaks HTTP/2 to it for reads and calls, whatever the client
	// spoke to its own Delta.
	h2only := &http.Server{Handler: app.Config.Handler, Protocols: new(http.Protocols)}
	h2only.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go h2only.Serve(ln)
	defer h2only.Close()
	if out, errOut, code := delta(t, "--state-dir", studio.dir, "apps", "add", "h2", "http://"+ln.Addr().String(), "--h2c"); code != cli.ExitOK || !strings.Contains(out, "HTTP/2 (h2c)") {
		t.Fatalf("delta apps add --h2c: exit %d, %s %s", code, out, errOut)
	}
	u = forwardURL(t, laptop, "h2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{u + "a"}, "HTTP/2.0 GET /a \n1.1 200"},
		{[]string{"--data-binary", "hi", u + "b"}, "HTTP/2.0 POST /b hi\n1.1 200"},
		{[]string{"--http2-prior-knowledge", "--data-binary", "hi", u + "c"}, "HTTP/2.0 POST /c hi\n2 200"},
	} {
		out, _ := runJob(t, nil, append([]string{"curl", "-sS", "-w", "\n%{http_version} %{http_code}"}, tc.args...)...)
		if out != tc.want {
			t.Errorf("an --h2c app, curl %v: %q, want %q", tc.args, out, tc.want)
		}
	}

	// delta apps suggest offers the ports programs listen on, each app
	// already shared named (issue 66's "Share an App…" reads the same).
	if runtime.GOOS == "linux" {
		out, errOut, code := delta(t, "--state-dir", studio.dir, "apps", "suggest")
		for _, want := range []string{app.URL + "\tshared as web", "http://" + ln.Addr().String() + "\tshared as h2"} {
			if code != cli.ExitOK || !strings.Contains(out, want) {
				t.Errorf("delta apps suggest: exit %d, no %q in\n%s%s", code, want, out, errOut)
			}
		}
		if strings.Contains(out, studio.peerAddr) {
			t.Errorf("delta apps suggest offers studio's own door %s:\n%s", studio.peerAddr, out)
		}
	}
}
