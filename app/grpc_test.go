package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
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
	for _, check := range []string{"unary", "stream", "clientstream", "error", "deadline"} {
		grpcCheck(t, py, addr, check, dir)
		grpcCheck(t, py, fwd, check, dir)
	}
	r := laptop.c.Must(t, "GET", "/v1/calls?limit=50", nil)
	for _, m := range []string{"/delta.test.Echo/Echo", "/delta.test.Echo/Count", "/delta.test.Echo/Sum"} {
		if !strings.Contains(string(r.Body), `"path": "`+m+`"`) {
			t.Errorf("the calls journal lists no %s: %s", m, r.Body)
		}
	}

	studio.kill(t)
	out := grpcCheck(t, py, fwd, "status", dir, "UNAVAILABLE", "nothing was sent", "grpc-refused-1")
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
}
