package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// roleHAProxy and roleHAProxyTLS are HAProxy's two hops, a baseline for
// the big transfers only (issue 40): it splices a body between its
// connections where it can (option splice-auto), which copying proxies
// (nginx, Caddy, Delta) do not.
const (
	roleHAProxy    role = "HAProxy"
	roleHAProxyTLS role = "HAProxy TLS"
)

// startHAProxy starts HAProxy as two hops to the app, as startNginx does
// nginx: hop 1 → hop 2 → app, and hop 1 → TLS → hop 2 → app, keep-alive
// on every hop, bodies streamed (no request buffering), splicing on.
func startHAProxy(root, appAddr string) (plain, tls target, version string, stop func(), err error) {
	exe, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			return plain, tls, "", nil, fmt.Errorf("haproxy is not installed (Debian: apt-get install haproxy; make bench-deps installs it as root)")
		}
		exe = "/usr/sbin/haproxy"
	}
	dir := filepath.Join(root, "haproxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plain, tls, "", nil, err
	}
	certFile, keyFile, err := selfSigned(dir)
	if err != nil {
		return plain, tls, "", nil, err
	}
	// HAProxy takes the certificate and its key in one file.
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return plain, tls, "", nil, err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return plain, tls, "", nil, err
	}
	pem := filepath.Join(dir, "both.pem")
	if err := os.WriteFile(pem, append(cert, key...), 0o600); err != nil {
		return plain, tls, "", nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return plain, tls, "", nil, err
		}
	}
	conf := fmt.Sprintf(`global
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 300s
  timeout server 300s
  option http-keep-alive
  option splice-auto
frontend hop1
  bind 127.0.0.1:%[2]d
  default_backend hop2
backend hop2
  server s 127.0.0.1:%[3]d
frontend hop2front
  bind 127.0.0.1:%[3]d
  default_backend app
backend app
  server a %[1]s
frontend tls1
  bind 127.0.0.1:%[4]d
  default_backend hop2tls
backend hop2tls
  server s 127.0.0.1:%[5]d ssl verify none
frontend tls2
  bind 127.0.0.1:%[5]d ssl crt %[6]s
  default_backend app
`, appAddr, ports[0], ports[1], ports[2], ports[3], pem)
	confFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return plain, tls, "", nil, err
	}
	if out, err := exec.Command(exe, "-v").Output(); err == nil {
		version, _, _ = strings.Cut(strings.TrimPrefix(string(out), "HAProxy version "), " ")
	}
	cmd := exec.Command(exe, "-db", "-f", confFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return plain, tls, "", nil, fmt.Errorf("start haproxy: %w", err)
	}
	stop = func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
	for _, p := range []int{ports[0], ports[2]} {
		if err := waitDial(fmt.Sprintf("127.0.0.1:%d", p), 10*time.Second); err != nil {
			stop()
			return plain, tls, "", nil, fmt.Errorf("haproxy did not start: %v\n%s", err, stderr.String())
		}
	}
	plain = target{name: "HAProxy (2 hops)", role: roleHAProxy, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[0])}
	tls = target{name: "HAProxy (2 hops, TLS between)", role: roleHAProxyTLS, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[2])}
	return plain, tls, version, stop, nil
}
