// Command bench is `make bench`: Delta side by side with its baselines, in
// one run on this machine, everything on loopback.
//
// It starts an owner app, nginx (Debian's) as two proxy hops with
// keep-alive upstreams (and a variant with TLS on the middle hop, like
// the lan road), and two pairs of Deltas as processes: static mode on the
// lan road (plain TCP), and tailnet mode on a loopback tailnet (Tailscale's
// test control server and DERP in this process) with the lan road's pinned
// TLS and tickets. wrk (Debian's) loads each: reads of 1 KiB, 64 KiB and
// 1 MiB at 1, 16 and 64 connections, and calls (each on a new connection,
// with its own request id) at 1, 16 and 64. Beside them, two floors: the
// least a Go forwarder can do as the same two hops (floor.go), and, idle,
// bare tsnet nodes, a pair quiet and a pair that connect to each other
// every 30 s (tsnetfloor.go). Around each wrk cell it reads the CPU of
// the forwarder's processes and of the machine (cpu.go), and beside the
// calls it runs the journals' floor (BenchmarkCallWrites) for the ceiling
// of durable calls, and a call at c=1 step by step (steps.go). Then the idle cost of a Delta with the tailnet up and the time
// from its start to serving its local API.
// It writes the figures, as ratios to direct and to nginx, into
// docs/benchmarks.md between its markers.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
	"github.com/delta-roads/delta/gateway/modes/tailnet/loopnet"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/kit"
	"github.com/delta-roads/delta/tools/bench/floor"
	"github.com/delta-roads/delta/tools/procmem"
)

var (
	duration    = flag.Duration("d", 5*time.Second, "how long wrk loads each cell")
	doc         = flag.String("doc", "docs/benchmarks.md", "the file whose generated section is rewritten (empty: print only)")
	quick       = flag.Bool("quick", false, "1 KiB reads and calls at c=16 only (a smoke run)")
	idleOnly    = flag.Bool("idle", false, "only the idle Delta's figures (nothing written)")
	phone       = flag.Bool("phone", false, "a bare tsnet node (a phone: on the tailnet, no Delta) joins the Deltas' tailnet too")
	idleFor     = flag.Duration("idle-for", 2*time.Minute+45*time.Second, "how long the tailnet Delta idles for its idle figures (its CPU counted after the first 30 s, its memory read in the last 30 s)")
	bigSize     = flag.Int64("big", 1<<30, "the size of the big read and the big call, in bytes")
	before      = flag.String("before", "", "a delta binary built from other code, run as two more pairs beside this code's, cell by cell")
	onlyTargets = flag.String("targets", "", "only the targets whose names match this regular expression")
	sizesFlag   = flag.String("sizes", "1k,64k,1m", "the read sizes (of 1k, 64k, 1m)")
	connsFlag   = flag.String("conns", "1,16,64", "the numbers of connections")
	hold        = flag.Bool("hold", false, "start everything, print the targets and the Deltas' pids, and wait for an interrupt (for profiling by hand)")
	parts       = flag.String("parts", "", "a comma-separated subset of reads,calls,steps,sends,big,revalidate (empty: all)")
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == floorArg || os.Args[1] == tsnetFloorArg) {
		// A floor's process (floor.go, tsnetfloor.go).
		floor := map[string]func([]string) error{floorArg: floor.Main, tsnetFloorArg: tsnetFloorMain}[os.Args[1]]
		if err := floor(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
		return
	}
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// role is what a target is, for the ratios.
type role string

const (
	roleDirect    role = "direct"
	roleNginx     role = "nginx"
	roleNginxTLS  role = "nginx TLS"
	roleCaddy     role = "Caddy"
	roleCaddyTLS  role = "Caddy TLS"
	roleDelta     role = "Delta"
	roleDeltaTLS  role = "Delta TLS"
	roleBefore    role = "before"
	roleBeforeTLS role = "before TLS"
	roleFloor     role = "Go floor"
	roleFloorTLS  role = "Go floor TLS"
)

// tls reports whether the target's middle hop is TLS.
func (r role) tls() bool { return strings.HasSuffix(string(r), "TLS") }

// delta reports whether the target is a pair of Deltas.
func (r role) delta() bool {
	return strings.HasPrefix(string(r), "Delta") || strings.HasPrefix(string(r), "before")
}

// nginx is the nginx target a target of role r is set beside: with TLS
// between the hops for a TLS road.
func (r role) nginx() role {
	if r.tls() {
		return roleNginxTLS
	}
	return roleNginx
}

// baselines are what a Delta target is compared with: Caddy's and
// nginx's two hops (with TLS between for a TLS road), and direct.
func (r role) baselines() []role {
	if r.tls() {
		return []role{roleCaddyTLS, r.nginx(), roleDirect}
	}
	return []role{roleCaddy, r.nginx(), roleDirect}
}

// target is one way to reach the owner app.
type target struct {
	name    string
	role    role
	readURL string // + "/r/<size>"
	callURL string
	headers []string
	// pids are the forwarder's processes (none for direct): a cell
	// counts their CPU a request.
	pids []int
}

// cell is one wrk run's figures.
type cell struct {
	rate     float64 // requests per second
	p50, p99 time.Duration
	errors   int
	requests int
	// cpu is the target's processes' CPU a request, user and system
	// (µs; 0 when it has none), and machine every process's on this
	// machine, wrk, the app and the kernel's work included
	// (/proc/stat, steal left out).
	cpu, machine float64
}

func run() error {
	for _, tool := range []string{"wrk", "nginx", "caddy"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
				return fmt.Errorf("%s is not installed (Debian: apt-get install %s; make bench-deps installs it as root)", tool, tool)
			}
		}
	}
	var only *regexp.Regexp
	if *onlyTargets != "" {
		var err error
		if only, err = regexp.Compile(*onlyTargets); err != nil {
			return fmt.Errorf("-targets: %w", err)
		}
	}
	root, err := os.MkdirTemp("", "delta-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// An interrupt ends the run at its next wait, and the deferred stops
	// take down every process it started (Deltas, nginx, Caddy, floors).
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	bin := filepath.Join(root, "delta")
	fmt.Println("building delta …")
	if out, err := exec.Command("go", "build", "-o", bin, "./app").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./app: %v\n%s", err, out)
	}

	appAddr, stopApp, err := ownerApp()
	if err != nil {
		return err
	}
	defer stopApp()
	sendsApp, err := gatewaytest.NewSendsApp()
	if err != nil {
		return err
	}
	defer sendsApp.Close()
	sendsAddr := strings.TrimPrefix(sendsApp.URL, "http://")
	direct := target{name: "direct", role: roleDirect, readURL: "http://" + appAddr, callURL: "http://" + appAddr + "/c"}

	nginxPlain, nginxTLS, stopNginx, err := startNginx(root, appAddr)
	if err != nil {
		return err
	}
	defer stopNginx()
	caddyPlain, caddyTLS, caddyVersion, stopCaddy, err := startCaddy(root, appAddr)
	if err != nil {
		return err
	}
	defer stopCaddy()
	floorPlain, floorTLS, stopFloor, err := startFloor(root, appAddr)
	if err != nil {
		return err
	}
	defer stopFloor()

	var procs []*deltaProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
		for _, stop := range busStops {
			stop()
		}
	}()
	staticPair, err := startStatic(ctx, root, bin, "static", &procs)
	if err != nil {
		return err
	}
	tn, err := loopnet.Start(loopnet.Options{})
	if err != nil {
		return err
	}
	defer tn.Close()
	tlsPair, startup, err := startTailnet(ctx, root, bin, "", true, tn, &procs)
	if err != nil {
		return err
	}
	// Idle first, before any load has grown its heap: the tray process
	// with the tailnet up, as a person's Mac runs it most of the day.
	// Not for -hold (profiling by hand starts at once); a smoke run
	// (-quick) idles one minute unless told.
	// Bare tsnet nodes (tsnetfloor.go) idle in the same window: one
	// pair quiet, one connecting to its peer every 30 s.
	var idle idleFigures
	var idleFloor [2]idleFigures
	if !*hold {
		d := *idleFor
		if *quick && !flagSet("idle-for") {
			d = idleStartup + idleSample
		}
		floorDone := make(chan error, len(idleFloor))
		for i, every := range []time.Duration{0, floorProbeEvery} {
			node, stopNet, err := startTSNetFloor(root, []string{"floor-", "floor-probed-"}[i], every, &procs)
			if err != nil {
				return err
			}
			defer stopNet()
			go func() {
				var err error
				idleFloor[i], err = idleCost(ctx, node, d)
				stopNet() // not to load the machine while the rest is measured
				floorDone <- err
			}()
		}
		idle, err = idleCost(ctx, tlsPair[0], d)
		for range idleFloor {
			if ferr := <-floorDone; err == nil && ferr != nil {
				err = fmt.Errorf("a bare tsnet node: %w", ferr)
			}
		}
		if err != nil {
			return err
		}
		fmt.Printf("idle (%s): %s; start to local API %s\n", tlsPair[0].name, idle, startup.Round(time.Millisecond))
		fmt.Printf("idle (a bare tsnet node): %s\n", idleFloor[0])
		fmt.Printf("idle (a bare tsnet node, connecting to its peer every %s): %s\n", floorProbeEvery, idleFloor[1])
	}
	if *idleOnly {
		return nil
	}
	pairs := [][2]*deltaProc{staticPair, tlsPair}
	deltaStatic := pairTarget(staticPair, "Delta (static, plain TCP)", roleDelta, "studio")
	deltaTLS := pairTarget(tlsPair, "Delta (lan road, pinned TLS)", roleDeltaTLS, "studio")
	deltaTLS.headers = append(deltaTLS.headers, "X-Delta-Route: lan")
	targets := []target{direct, nginxPlain, nginxTLS, caddyPlain, caddyTLS, floorPlain, floorTLS, deltaStatic, deltaTLS}
	watches := map[string][2]*deltaProc{deltaStatic.name: staticPair, deltaTLS.name: tlsPair}
	if *before != "" {
		// The same cells through Deltas built from other code, in the
		// same run: each cell runs every target in turn, so the two
		// are measured alternately, under the same conditions.
		oldStatic, err := startStatic(ctx, root, *before, "before-static", &procs)
		if err != nil {
			return fmt.Errorf("-before: %w", err)
		}
		oldTLS, _, err := startTailnet(ctx, root, *before, "before-", false, tn, &procs)
		if err != nil {
			return fmt.Errorf("-before: %w", err)
		}
		pairs = append(pairs, oldStatic, oldTLS)
		bs := pairTarget(oldStatic, "before (static, plain TCP)", roleBefore, "studio")
		bt := pairTarget(oldTLS, "before (lan road, pinned TLS)", roleBeforeTLS, "before-studio")
		bt.headers = append(bt.headers, "X-Delta-Route: lan")
		targets = append(targets, bs, bt)
		watches[bs.name], watches[bt.name] = oldStatic, oldTLS
	}
	for _, pair := range pairs {
		if _, err := pair[1].kit.RegisterApp(ctx, "bench", "http://"+appAddr); err != nil {
			return fmt.Errorf("register the owner app on %s: %w", pair[1].name, err)
		}
		if _, err := pair[1].kit.RegisterApp(ctx, "sends", "http://"+sendsAddr); err != nil {
			return fmt.Errorf("register the sends app on %s: %w", pair[1].name, err)
		}
	}
	if *hold {
		// For profiling by hand (perf record -p PID, wrk): everything
		// stays up until this process is interrupted.
		for _, t := range targets {
			fmt.Printf("%-36s %s/r/1k %s\n", t.name, t.readURL, strings.Join(t.headers, " "))
		}
		for _, pair := range pairs {
			fmt.Printf("%s pid %d, %s pid %d\n", pair[0].name, pair[0].cmd.Process.Pid, pair[1].name, pair[1].cmd.Process.Pid)
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return nil
	}
	if only != nil {
		var kept []target
		for _, t := range targets {
			if only.MatchString(t.name) {
				kept = append(kept, t)
			}
		}
		targets = kept
	}

	sizes := strings.Split(*sizesFlag, ",")
	var conns []int
	for _, c := range strings.Split(*connsFlag, ",") {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return fmt.Errorf("-conns: %q is not a number of connections", c)
		}
		conns = append(conns, n)
	}
	if *quick {
		sizes, conns = []string{"1k"}, []int{16}
	}
	want := func(part string) bool { return *parts == "" || strings.Contains(","+*parts+",", ","+part+",") }
	reads := map[string]cell{}
	if want("reads") {
		for _, size := range sizes {
			for _, c := range conns {
				for _, tg := range targets {
					key := fmt.Sprintf("%s|%d|%s", size, c, tg.name)
					r, err := wrk(ctx, root, tg, tg.readURL+"/r/"+size, c, false)
					if err != nil {
						return fmt.Errorf("read %s: %w", key, err)
					}
					fmt.Printf("read %-4s c=%-2d %-36s %9.0f/s  p50 %-9s p99 %-9s errors %d\n", size, c, tg.name, r.rate, r.p50, r.p99, r.errors)
					reads[key] = r
				}
			}
		}
	}
	calls := map[string]cell{}
	if want("calls") {
		for _, c := range conns {
			for _, tg := range targets {
				key := fmt.Sprintf("%d|%s", c, tg.name)
				r, err := wrk(ctx, root, tg, tg.callURL, c, true)
				if err != nil {
					return fmt.Errorf("call %s: %w", key, err)
				}
				fmt.Printf("call c=%-2d %-36s %9.0f/s  p50 %-9s p99 %-9s errors %d\n", c, tg.name, r.rate, r.p50, r.p99, r.errors)
				calls[key] = r
			}
		}
	}
	// The journals' floor beside the calls, for the ceiling of durable calls.
	var journals journalsFigure
	if len(calls) > 0 && !*quick {
		journals = journalsFloor(ctx)
		fmt.Printf("journals' floor (BenchmarkCallWrites, 16 in flight): %s\n", journals)
	}
	// A call at c=1 step by step, through a traced pair of its own.
	steps := stepsFigure{err: errNotRun}
	if !*quick && want("steps") {
		steps = measureSteps(ctx, root, bin, appAddr, &procs)
		fmt.Printf("steps: a call %s and a read %s with curl, %s and %s with Go's client (%v)\n", us(steps.curlCall), us(steps.curlRead), us(steps.goCall), us(steps.goRead), steps.err)
	}
	// An owner app that answers in several sends, through each Delta
	// and directly.
	var sends []sendsFigure
	if !*quick && want("sends") {
		if sends, err = measureSends(ctx, root, sendsTargets(targets, sendsAddr)); err != nil {
			return err
		}
	}
	// Big transfers: one read and one call of bigSize through each
	// target, the Deltas' memory sampled throughout.
	var bigs []bigFigure
	bigTargets, haproxyVersion := targets, ""
	if !*quick && want("big") {
		// HAProxy beside the others for the big transfers (it splices).
		if hp, hpTLS, version, stopHAProxy, err := startHAProxy(root, appAddr); err != nil {
			fmt.Println("big transfers without HAProxy:", err)
		} else {
			defer stopHAProxy()
			haproxyVersion = version
			fmt.Println("HAProxy", version)
			for _, t := range []target{hp, hpTLS} {
				if only == nil || only.MatchString(t.name) {
					bigTargets = append(slices.Clone(bigTargets), t)
				}
			}
		}
		for _, call := range []bool{false, true} {
			for _, tg := range bigTargets {
				watch := map[string]*deltaProc{}
				if pair, ok := watches[tg.name]; ok {
					watch = map[string]*deltaProc{"laptop": pair[0], "studio": pair[1]}
				}
				f := bigTransfer(ctx, tg, call, *bigSize, watch)
				fmt.Printf("big %s %-36s %s\n", map[bool]string{false: "read", true: "call"}[call], tg.name, f)
				bigs = append(bigs, f)
			}
		}
	}
	// Revalidation: a 10 MiB answer stored and revalidated over the
	// tailnet road, each read after the first.
	var revals []revalFigure
	if !*quick && want("revalidate") {
		for _, tg := range targets {
			if !tg.role.tls() || !tg.role.delta() {
				continue
			}
			f := revalidate(ctx, tg, 10<<20, 5)
			fmt.Printf("revalidate %-36s %s\n", tg.name, f)
			revals = append(revals, f)
		}
	}
	section := report(targets, bigTargets, caddyVersion, haproxyVersion, sizes, conns, reads, calls, journals, steps, sends, idle, idleFloor, startup, bigs, revals)
	fmt.Println(section)
	if *doc == "" {
		return nil
	}
	return writeSection(*doc, section)
}

// validatedBytes counts the body bytes the owner app sent on /v/.
var validatedBytes atomic.Int64

// ownerApp serves GET /r/{1k,64k,1m}, /big/{n}, /v/{n} and POST /c on
// loopback.
func ownerApp() (string, func(), error) {
	bodies := map[string][]byte{"1k": bytes.Repeat([]byte("x"), 1<<10), "64k": bytes.Repeat([]byte("x"), 64<<10), "1m": bytes.Repeat([]byte("x"), 1<<20)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /r/{size}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.PathValue("size")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	})
	mux.HandleFunc("GET /big/{size}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.PathValue("size"), 10, 64)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.Copy(w, io.LimitReader(zeros{}, n))
	})
	// /v/{size}: an answer that may be stored but must be revalidated
	// each time (max-age=0, an ETag), whose body bytes are counted.
	mux.HandleFunc("GET /v/{size}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.PathValue("size"), 10, 64)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=0")
		w.Header().Set("ETag", `"bench-1"`)
		if r.Header.Get("If-None-Match") == `"bench-1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		m, _ := io.Copy(w, io.LimitReader(zeros{}, n))
		validatedBytes.Add(m)
	})
	mux.HandleFunc("POST /c", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"ok":true}`))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// startNginx runs nginx with two hops to the owner app, plain and with TLS
// on the middle hop.
func startNginx(root, appAddr string) (plain, tls target, stop func(), err error) {
	dir := filepath.Join(root, "nginx")
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return plain, tls, nil, err
	}
	certFile, keyFile, err := selfSigned(dir)
	if err != nil {
		return plain, tls, nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return plain, tls, nil, err
		}
	}
	// hop 1 (ports[0]) → hop 2 (ports[1]) → app; TLS: hop 1 (ports[2]) →
	// https hop 2 (ports[3]) → app. Keep-alive upstreams on both hops.
	conf := fmt.Sprintf(`daemon off;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 100000;
  client_max_body_size 0;
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering on;
  proxy_buffers 64 16k;
  # A 1 GiB read or call streams through (without these, nginx spools
  # it to temporary files and gives up past 1 GiB).
  proxy_max_temp_file_size 0;
  proxy_request_buffering off;
  upstream app { server %[2]s; keepalive 128; }
  upstream hop2 { server 127.0.0.1:%[4]d; keepalive 128; }
  upstream hop2tls { server 127.0.0.1:%[6]d; keepalive 128; }
  server { listen 127.0.0.1:%[3]d; location / { proxy_pass http://hop2; } }
  server { listen 127.0.0.1:%[4]d; location / { proxy_pass http://app; } }
  server { listen 127.0.0.1:%[5]d; location / { proxy_pass https://hop2tls; proxy_ssl_protocols TLSv1.3; proxy_ssl_session_reuse on; proxy_ssl_verify off; } }
  server { listen 127.0.0.1:%[6]d ssl; ssl_certificate %[7]s; ssl_certificate_key %[8]s; ssl_protocols TLSv1.3; location / { proxy_pass http://app; } }
}
`, dir, appAddr, ports[0], ports[1], ports[2], ports[3], certFile, keyFile)
	confFile := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return plain, tls, nil, err
	}
	exe := "nginx"
	if _, err := exec.LookPath(exe); err != nil {
		exe = "/usr/sbin/nginx"
	}
	cmd := exec.Command(exe, "-p", dir, "-c", confFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return plain, tls, nil, fmt.Errorf("start nginx: %w", err)
	}
	stop = func() { cmd.Process.Signal(syscall.SIGQUIT); cmd.Wait() }
	for _, p := range []int{ports[0], ports[2]} {
		if err := waitDial(fmt.Sprintf("127.0.0.1:%d", p), 10*time.Second); err != nil {
			stop()
			return plain, tls, nil, fmt.Errorf("nginx did not start: %v\n%s", err, stderr.String())
		}
	}
	// Its workers, started by its master: wait for both.
	var pids []int
	if err := waitCond(10*time.Second, "nginx's two workers", func() bool {
		pids = withChildren(cmd.Process.Pid)
		return len(pids) == 3
	}); err != nil {
		stop()
		return plain, tls, nil, err
	}
	plain = target{name: "nginx (2 hops)", role: roleNginx, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[0]), pids: pids}
	tls = target{name: "nginx (2 hops, TLS between)", role: roleNginxTLS, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[2]), pids: pids}
	return plain, tls, stop, nil
}

func selfSigned(dir string) (certFile, keyFile string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hop2"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return "", "", err
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// deltaProc is one Delta process.
type deltaProc struct {
	name, dir string
	cmd       *exec.Cmd
	done      chan struct{}
	kit       *kit.Client
	token     string
	started   time.Time
}

// pairTarget is the owner app reached through a pair of Deltas: the
// first's local API, the second (the peer named peer) the owner's.
func pairTarget(pair [2]*deltaProc, name string, r role, peer string) target {
	base := strings.TrimSuffix(pair[0].kit.URL(), "/") + "/v1/peers/" + peer + "/bench"
	return target{name: name, role: r, readURL: base, callURL: base + "/c", headers: []string{"Authorization: Bearer " + pair[0].token},
		pids: []int{pair[0].cmd.Process.Pid, pair[1].cmd.Process.Pid}}
}

func startDelta(ctx context.Context, root, bin, name string, args []string, env []string, procs *[]*deltaProc) (*deltaProc, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return startIn(ctx, bin, name, dir, args, env, procs)
}

// spawn starts argv as the process name, its output in dir.out, with
// TS_NO_LOGS_NO_SUPPORT and env in its environment, and adds it to procs
// (run stops them all).
func spawn(name, dir string, argv, env []string, procs *[]*deltaProc) (*deltaProc, error) {
	out, err := os.Create(dir + ".out")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "TS_NO_LOGS_NO_SUPPORT=true"), env...)
	cmd.Stdout, cmd.Stderr = out, out
	p := &deltaProc{name: name, dir: dir, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	*procs = append(*procs, p)
	go func() { cmd.Wait(); out.Close(); close(p.done) }()
	return p, nil
}

func startIn(ctx context.Context, bin, name, dir string, args []string, env []string, procs *[]*deltaProc) (*deltaProc, error) {
	// Each Delta runs its own copy of the program, as on a computer of its
	// own: Deltas sharing one file share its pages in the page cache, and
	// one's trim cannot evict what another maps (app/pages_linux.go).
	own := dir + ".delta"
	if err := copyFile(bin, own); err != nil {
		return nil, err
	}
	p, err := spawn(name, dir, append([]string{own, "run", "--state-dir", dir, "--listen", "127.0.0.1:0"}, args...), env, procs)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s stopped at once (its output: %s.out)", name, dir)
		default:
		}
		if lf, err := localapi.ReadLocal(dir); err == nil && lf.PID == p.cmd.Process.Pid {
			if p.kit, err = kit.Open(dir); err == nil {
				if _, err := p.kit.Status(ctx); err == nil {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not start within 60 s (its output: %s.out)", name, dir)
		}
		time.Sleep(5 * time.Millisecond) // polling another process's file: it sends no event
	}
	tok, err := os.ReadFile(filepath.Join(dir, "local-token"))
	if err != nil {
		return nil, err
	}
	p.token = strings.TrimSpace(string(tok))
	return p, nil
}

func (p *deltaProc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// startStatic starts laptop and studio in static mode on the lan road, in
// folders named prefix-laptop and prefix-studio.
func startStatic(ctx context.Context, root, bin, prefix string, procs *[]*deltaProc, args ...string) ([2]*deltaProc, error) {
	var pair [2]*deltaProc
	names := [2]string{prefix + "-laptop", prefix + "-studio"}
	ports := [2]int{}
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return pair, err
		}
	}
	for i, name := range names {
		other := 1 - i
		short := map[int]string{0: "laptop", 1: "studio"}
		cfg := map[string]any{"name": short[i], "peer_listen": fmt.Sprintf("127.0.0.1:%d", ports[i]), "network_key": "00112233445566778899aabbccddeeff",
			"peers": []any{map[string]any{"name": short[other], "roads": map[string]string{"lan": fmt.Sprintf("127.0.0.1:%d", ports[other])}}}}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return pair, err
		}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
			return pair, err
		}
		p, err := startIn(ctx, bin, name, dir, append([]string{"--headless"}, args...), nil, procs)
		if err != nil {
			return pair, err
		}
		pair[i] = p
	}
	return pair, nil
}

// startTailnet starts laptop and studio on the loopback tailnet, the lan
// road on 127.0.0.1 with pinned TLS and tickets; laptop with its tray when
// a session bus can be had (a private dbus-daemon). It returns how long
// laptop took from its start to serving its local API. Their names begin
// with prefix; laptop has no tray unless tray.
func startTailnet(ctx context.Context, root, bin, prefix string, tray bool, tn *loopnet.Net, procs *[]*deltaProc) ([2]*deltaProc, time.Duration, error) {
	var pair [2]*deltaProc
	var startup time.Duration
	busEnv := ""
	if tray {
		var stopBus func()
		busEnv, stopBus = privateBus(root)
		busStops = append(busStops, stopBus) // after the Deltas that use it
	}
	for i, name := range []string{prefix + "laptop", prefix + "studio"} {
		port, err := freePort()
		if err != nil {
			return pair, 0, err
		}
		args := []string{"--control-url", tn.URL, "--hostname", name, "--lan-addrs", "127.0.0.1", "--lan-port", strconv.Itoa(port)}
		var env []string
		if i == 0 && busEnv != "" {
			env = []string{"DBUS_SESSION_BUS_ADDRESS=" + busEnv}
		} else {
			args = append(args, "--headless")
		}
		p, err := startDelta(ctx, root, bin, "tailnet-"+name, args, env, procs)
		if err != nil {
			return pair, 0, err
		}
		if i == 0 {
			startup = time.Since(p.started)
		}
		pair[i] = p
	}
	for _, p := range pair {
		if err := waitCond(60*time.Second, p.name+" logged in", func() bool {
			st, err := p.kit.Status(ctx)
			return err == nil && st.Tailnet != nil && st.Tailnet.State == "Running"
		}); err != nil {
			return pair, 0, err
		}
	}
	if *phone {
		if _, err := spawnBareNode(root, prefix+"phone", tn.URL, 0, procs); err != nil {
			return pair, 0, err
		}
	}
	tn.SameUserAll()
	err := waitCond(60*time.Second, "laptop to find studio on the lan road", func() bool {
		st, err := pair[0].kit.Status(ctx)
		if err != nil {
			return false
		}
		for _, p := range st.Peers {
			if p.Name == prefix+"studio" {
				for _, r := range p.Roads {
					if r.Road == string(roads.LAN) && r.State == localapi.RoadUp {
						return true
					}
				}
			}
		}
		return false
	})
	return pair, startup, err
}

// busStops end the private buses, once their trays have gone (run's
// deferred stops run them last).
var busStops []func()

// privateBus starts a dbus-daemon for the tray, or returns "" without one.
func privateBus(root string) (string, func()) {
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return "", func() {}
	}
	conf := filepath.Join(root, "bus.conf")
	os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=`+filepath.Join(root, "bus")+`</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
`), 0o600)
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return "", func() {}
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return "", func() {}
	}
	return strings.TrimSpace(line), func() { cmd.Process.Kill(); cmd.Wait() }
}

// wrk runs one cell. A call cell sends each request on a new connection
// with its own request id (a Lua script).
func wrk(ctx context.Context, root string, tg target, url string, conns int, call bool) (cell, error) {
	headers := tg.headers
	args := []string{"-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(duration.Seconds())), "--latency", "--timeout", "10s"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	if call {
		script := filepath.Join(root, "call.lua")
		// wrk.format's headers replace wrk.headers (the -H ones): copy them.
		lua := fmt.Sprintf(`local n = 0
local prefix = "%d"
local body = string.rep("x", 1024)
request = function()
  n = n + 1
  local h = {}
  for k, v in pairs(wrk.headers) do h[k] = v end
  h["X-Delta-Request-Id"] = "bench-" .. prefix .. "-" .. n
  h["X-Delta-Timeout"] = "10"
  h["Connection"] = "close"
  return wrk.format("POST", nil, h, body)
end
`, time.Now().UnixNano())
		if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
			return cell{}, err
		}
		args = append(args, "-s", script)
	}
	args = append(args, url)
	before, err := cpuNow(tg.pids)
	if err != nil {
		return cell{}, err
	}
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput()
	if err != nil {
		return cell{}, fmt.Errorf("wrk %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	after, err := cpuNow(tg.pids)
	if err != nil {
		return cell{}, err
	}
	c, err := parseWrk(string(out))
	if err == nil && c.requests > 0 {
		c.cpu, c.machine = after.sub(before).perRequest(c.requests)
	}
	return c, err
}

var (
	rateRe  = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	totalRe = regexp.MustCompile(`(\d+) requests in`)
	pctRe   = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	errRe   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	sockRe  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk's --latency output.
func parseWrk(out string) (cell, error) {
	var c cell
	m := rateRe.FindStringSubmatch(out)
	if m == nil {
		return c, fmt.Errorf("no Requests/sec in wrk's output:\n%s", out)
	}
	c.rate, _ = strconv.ParseFloat(m[1], 64)
	if m := totalRe.FindStringSubmatch(out); m != nil {
		c.requests, _ = strconv.Atoi(m[1])
	}
	for _, m := range pctRe.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		d := time.Duration(v * float64(map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[3]]))
		if m[1] == "50" {
			c.p50 = d
		} else {
			c.p99 = d
		}
	}
	if m := errRe.FindStringSubmatch(out); m != nil {
		c.errors, _ = strconv.Atoi(m[1])
	}
	if m := sockRe.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			c.errors += n
		}
	}
	return c, nil
}

// idleFigures are a Delta's memory and CPU while nothing uses it.
type idleFigures struct {
	rssMB    float64
	maxRSSMB float64 // the most RSS seen while memory was sampled
	anonMB   float64 // its own memory (RssAnon)
	fileMB   float64 // mapped files' pages, its program's (RssFile)
	pmdMB    float64 // of fileMB, the pages mapped in 2 MB pieces (FilePmdMapped)
	cpuPct   float64
	after    time.Duration // how long it had idled when memory was read
	window   time.Duration // the CPU's window
	hasTray  bool
}

func (f idleFigures) String() string {
	return fmt.Sprintf("after %s: RSS %.1f MB (at most %.1f MB in its last %s; its own memory %.1f MB; pages of its program and other files %.1f MB, %.1f MB of them mapped in 2 MB pieces, shared with every process that maps them), CPU %.2f %% over %s (tray: %v)",
		f.after.Round(time.Second), f.rssMB, f.maxRSSMB, idleSample, f.anonMB, f.fileMB, f.pmdMB, f.cpuPct, f.window.Round(time.Second), f.hasTray)
}

// The idle Delta's timeline (idleCost): start-up work (login, discovery,
// first probes) is left out of its CPU for idleStartup; its memory is
// read over the last idleSample of -idle-for, which is past the Go
// runtime's first forced collection (2 minutes), when its heap has
// settled: measured 35 s after its start, its own memory was 5–8 MB
// below what it holds from then on.
const (
	idleStartup = 30 * time.Second
	idleSample  = 30 * time.Second
)

func idleCost(ctx context.Context, p *deltaProc, total time.Duration) (idleFigures, error) {
	if total < idleStartup+idleSample {
		return idleFigures{}, fmt.Errorf("-idle-for %s is shorter than the start-up left out (%s) and the sampling (%s)", total, idleStartup, idleSample)
	}
	pid := p.cmd.Process.Pid
	f := idleFigures{after: total}
	out, _ := os.ReadFile(p.dir + ".out")
	f.hasTray = bytes.Contains(out, []byte("tray is up"))
	if err := sleep(ctx, idleStartup); err != nil {
		return f, err
	}
	t0, err := cpuTicks(pid)
	if err != nil {
		return f, err
	}
	start := time.Now()
	if err := sleep(ctx, total-idleStartup-idleSample); err != nil { // the idle state is the point
		return f, err
	}
	for end := time.Now().Add(idleSample); ; {
		rss := procmem.RSS(pid)
		if rss == 0 {
			return f, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
		}
		f.rssMB = float64(rss) / (1 << 20)
		f.maxRSSMB = max(f.maxRSSMB, f.rssMB)
		if !time.Now().Before(end) {
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return f, err
		}
	}
	t1, err := cpuTicks(pid)
	if err != nil {
		return f, err
	}
	f.window = time.Since(start)
	f.cpuPct = float64(t1-t0) / userHZ / f.window.Seconds() * 100
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	f.anonMB, f.fileMB = mb(procmem.Field(pid, "RssAnon")), mb(procmem.Field(pid, "RssFile"))
	f.pmdMB = mb(procmem.Rollup(pid, "FilePmdMapped"))
	return f, nil
}

// sleep waits for d, or until ctx ends (its error, then).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bigFigure is one big transfer: its target, which way, its rate, and the
// peak resident memory of each Delta it went through.
type bigFigure struct {
	target string
	call   bool
	size   int64
	took   time.Duration
	peak   map[string]int64
	err    error
}

func (f bigFigure) rate() float64 { return float64(f.size) / (1 << 20) / f.took.Seconds() }

func (f bigFigure) String() string {
	if f.err != nil {
		return "failed: " + f.err.Error()
	}
	s := fmt.Sprintf("%.0f MiB/s in %s", f.rate(), f.took.Round(time.Millisecond))
	for _, n := range []string{"laptop", "studio"} {
		if v, ok := f.peak[n]; ok {
			s += fmt.Sprintf(", %s peak RSS %.1f MB", n, float64(v)/(1<<20))
		}
	}
	return s
}

// bigTransfer reads (or calls with) size bytes through tg on a connection
// of its own, while sampling the resident memory of the Deltas in watch.
func bigTransfer(ctx context.Context, tg target, call bool, size int64, watch map[string]*deltaProc) bigFigure {
	f := bigFigure{target: tg.name, call: call, size: size, peak: map[string]int64{}}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for n, p := range watch {
				f.peak[n] = max(f.peak[n], procmem.RSS(p.cmd.Process.Pid))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	method, url, body := http.MethodGet, tg.readURL+"/big/"+strconv.FormatInt(size, 10), io.Reader(nil)
	if call {
		method, url, body = http.MethodPost, tg.callURL, io.LimitReader(zeros{}, size)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err == nil {
		req.ContentLength = map[bool]int64{false: 0, true: size}[call]
		for _, h := range tg.headers {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(k, strings.TrimSpace(v))
		}
		if call {
			req.Header.Set("X-Delta-Request-Id", fmt.Sprintf("bench-big-%d", time.Now().UnixNano()))
			req.Header.Set("X-Delta-Timeout", "120")
		}
		start := time.Now()
		var resp *http.Response
		resp, err = (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err == nil {
			var n int64
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
			case resp.StatusCode/100 != 2:
				err = fmt.Errorf("answered %s", resp.Status)
			case !call && n != size:
				err = fmt.Errorf("%d bytes of %d", n, size)
			}
		}
		f.took = time.Since(start)
	}
	close(stop)
	<-sampled
	f.err = err
	return f
}

func report(targets, bigTargets []target, caddyVersion, haproxyVersion string, sizes []string, conns []int, reads, calls map[string]cell, journals journalsFigure, steps stepsFigure, sends []sendsFigure, idle idleFigures, idleFloor [2]idleFigures, startup time.Duration, bigs []bigFigure, revals []revalFigure) string {
	var b strings.Builder
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindSubmatch(info); m != nil {
			cpu = strings.TrimSpace(string(m[1]))
		}
	}
	fmt.Fprintf(&b, "Measured %s on %s (%d cores, %s, %s), by `make bench` (`go run ./tools/bench %s`): wrk -t1 for %s per cell, everything on loopback, the Deltas' journals on this machine's disk. Baselines: %s, Caddy %s (Debian's, `reverse_proxy`), both as two hops with keep-alive upstreams, plain and with TLS 1.3 between the hops; and the Go floor (tools/bench/floor.go), the least a forwarder in Go can do, as the same two hops: a head passed on byte for byte, bodies by Content-Length, one goroutine a connection, nothing allocated a request. A call's `Connection: close` goes on to each hop, so every hop of a call is a new connection, as Delta's are. For small reads and calls the floor is a ceiling for Delta, which does more a request; the floor over nginx is what of a goal against nginx is in reach of Go on this machine.\n\n",
		time.Now().UTC().Format("2006-01-02"), host, runtime.NumCPU(), cpu, runtime.Version(), strings.Join(os.Args[1:], " "), *duration, nginxVersion(), caddyVersion)
	byRole := map[role]target{}
	for _, t := range targets {
		byRole[t.role] = t
	}
	// header writes a table's first two rows: first, a column per target,
	// then extra.
	header := func(first string, extra ...string) {
		b.WriteString("| " + first + " |")
		for _, t := range targets {
			fmt.Fprintf(&b, " %s |", t.name)
		}
		for _, e := range extra {
			b.WriteString(" " + e + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(targets)+len(extra)) + "\n")
	}
	// ratios writes, for each Delta target, its rate over each of its
	// baselines (and over the code before, with -before), and its p50
	// over nginx's.
	type ratioCol struct {
		name    string
		of, per role
		p50     bool
	}
	var cols []ratioCol
	for _, t := range targets {
		if t.role == roleFloor || t.role == roleFloorTLS {
			// The floor over nginx: what of a goal against nginx
			// is in reach of Go here.
			if base := t.role.nginx(); byRole[base].name != "" {
				cols = append(cols, ratioCol{name: fmt.Sprintf("%s ÷ %s", t.role, base), of: t.role, per: base})
			}
			continue
		}
		if !t.role.delta() {
			continue
		}
		for _, base := range t.role.baselines() {
			if _, ok := byRole[base]; ok {
				cols = append(cols, ratioCol{name: fmt.Sprintf("%s ÷ %s", t.role, base), of: t.role, per: base})
			}
		}
		if old := role(strings.Replace(string(t.role), "Delta", "before", 1)); old != t.role {
			if _, ok := byRole[old]; ok {
				cols = append(cols, ratioCol{name: fmt.Sprintf("%s ÷ %s", t.role, old), of: t.role, per: old})
			}
		}
	}
	for _, r := range []role{roleDelta, roleDeltaTLS, roleFloor, roleFloorTLS} {
		base := r.nginx()
		_, ok1 := byRole[r]
		_, ok2 := byRole[base]
		if ok1 && ok2 {
			cols = append(cols, ratioCol{name: fmt.Sprintf("p50: %s ÷ %s", r, base), of: r, per: base, p50: true})
		}
	}
	ratioTable := func(first string, rows []string, get func(row string, r role) cell) {
		if len(cols) == 0 {
			return
		}
		b.WriteString("| " + first + " |")
		for _, c := range cols {
			b.WriteString(" " + c.name + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
		for _, row := range rows {
			fmt.Fprintf(&b, "| %s |", row)
			for _, c := range cols {
				x, y := get(row, c.of), get(row, c.per)
				switch {
				case c.p50 && x.p50 > 0 && y.p50 > 0:
					fmt.Fprintf(&b, " %.2f |", float64(x.p50)/float64(y.p50))
				case !c.p50 && x.rate > 0 && y.rate > 0:
					fmt.Fprintf(&b, " **%.2f** |", x.rate/y.rate)
				default:
					b.WriteString(" — |")
				}
			}
			b.WriteString("\n")
		}
	}
	if len(reads) > 0 {
		b.WriteString("### Reads (requests per second; p50 / p99)\n\n")
		header("size, connections")
		var rows []string
		for _, size := range sizes {
			for _, c := range conns {
				row := fmt.Sprintf("%s, c=%d", size, c)
				rows = append(rows, row)
				fmt.Fprintf(&b, "| %s |", row)
				for _, t := range targets {
					r := reads[fmt.Sprintf("%s|%d|%s", size, c, t.name)]
					fmt.Fprintf(&b, " %s (%s / %s)%s |", rate(r.rate), dur(r.p50), dur(r.p99), errNote(r))
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\nThe same reads as ratios (requests per second of Delta over its baseline's; the last columns compare p50s, lower is better):\n\n")
		ratioTable("size, connections", rows, func(row string, r role) cell {
			var size string
			var c int
			fmt.Sscanf(strings.Replace(row, ", c=", " ", 1), "%s %d", &size, &c)
			return reads[fmt.Sprintf("%s|%d|%s", size, c, byRole[r].name)]
		})
	}
	if len(calls) > 0 {
		b.WriteString("\n### Calls (1 KiB, each on a new connection with its own request id; per second, p50 / p99)\n\n")
		header("connections")
		var rows []string
		for _, c := range conns {
			row := fmt.Sprintf("c=%d", c)
			rows = append(rows, row)
			fmt.Fprintf(&b, "| %s |", row)
			for _, t := range targets {
				r := calls[fmt.Sprintf("%d|%s", c, t.name)]
				fmt.Fprintf(&b, " %s (%s / %s)%s |", rate(r.rate), dur(r.p50), dur(r.p99), errNote(r))
			}
			b.WriteString("\n")
		}
		b.WriteString("\nThe same calls as ratios:\n\n")
		ratioTable("connections", rows, func(row string, r role) cell {
			var c int
			fmt.Sscanf(row, "c=%d", &c)
			return calls[fmt.Sprintf("%d|%s", c, byRole[r].name)]
		})
	}
	cpuReport(&b, targets, sizes, conns, reads, calls, journals)
	if steps.err != errNotRun {
		b.WriteString("\n" + strings.TrimRight(stepsReport(steps), "\n") + "\n")
	}
	if len(sends) > 0 {
		b.WriteString("\n")
		sendsReport(&b, sends) // ends with its table's last line
	}
	if len(bigs) > 0 {
		fmt.Fprintf(&b, "\n### One big transfer (%s, one connection; MiB/s, and the peak resident memory of each Delta during it)\n\n", humanSize(bigs[0].size))
		if haproxyVersion != "" {
			fmt.Fprintf(&b, "HAProxy %s (Debian's) is a baseline here only: two hops with keep-alive, bodies streamed, `option splice-auto` (it moves a body between its connections in the kernel where it can).\n\n", haproxyVersion)
		}
		b.WriteString("| through | read | call | Deltas' peak RSS (read; call) |\n|---|---|---|---|\n")
		byKey := map[string]bigFigure{}
		for _, f := range bigs {
			byKey[fmt.Sprintf("%s|%v", f.target, f.call)] = f
		}
		cellOf := func(x bigFigure) string {
			if x.err != nil {
				return "failed (" + x.err.Error() + ")"
			}
			return fmt.Sprintf("%.0f", x.rate())
		}
		for _, t := range bigTargets {
			rd, cl := byKey[t.name+"|false"], byKey[t.name+"|true"]
			peaks := "—"
			if len(rd.peak) > 0 {
				peaks = fmt.Sprintf("laptop %.0f / studio %.0f MB; laptop %.0f / studio %.0f MB", float64(rd.peak["laptop"])/(1<<20), float64(rd.peak["studio"])/(1<<20),
					float64(cl.peak["laptop"])/(1<<20), float64(cl.peak["studio"])/(1<<20))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.name, cellOf(rd), cellOf(cl), peaks)
		}
		b.WriteString("\nThe same transfers as ratios:\n\n")
		ratioTable("transfer", []string{"read", "call"}, func(row string, r role) cell {
			f, ok := byKey[fmt.Sprintf("%s|%v", byRole[r].name, row == "call")]
			if !ok || f.err != nil {
				return cell{}
			}
			return cell{rate: f.rate()}
		})
	}
	if len(revals) > 0 {
		fmt.Fprintf(&b, "\n### A stored answer revalidated over the tailnet road (%s, `max-age=0` with an ETag; %d reads after the first)\n\n", humanSize(revals[0].size), revals[0].reads)
		b.WriteString("| through | a read takes (mean) | body bytes the owner app sent a read |\n|---|---|---|\n")
		for _, f := range revals {
			if f.err != nil {
				fmt.Fprintf(&b, "| %s | failed (%v) | — |\n", f.target, f.err)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d |\n", f.target, dur(f.mean), f.bodyBytes)
		}
	}
	fmt.Fprintf(&b, "\n### A Delta with the tailnet up, idle\n\n%s; from its start to serving its local API: %s.\n", idle, startup.Round(time.Millisecond))
	if idleFloor[0].after > 0 {
		fmt.Fprintf(&b, "\nThe tailnet's floor, in the same window: a bare tsnet node with one peer in a loopback tailnet of its own (tools/bench/tsnetfloor.go: no roads, journal, local API or tray), %s.\n", idleFloor[0])
		fmt.Fprintf(&b, "\nThe same, its pair connecting to each other over the tailnet every %s (as often as Delta checks a road it believes up), %s.\n", floorProbeEvery, idleFloor[1])
	}
	return b.String()
}

// nginxVersion is "nginx 1.22.1", or "nginx".
func nginxVersion() string {
	exe := "nginx"
	if _, err := exec.LookPath(exe); err != nil {
		exe = "/usr/sbin/nginx"
	}
	out, _ := exec.Command(exe, "-v").CombinedOutput()
	if m := regexp.MustCompile(`nginx/(\S+)`).FindSubmatch(out); m != nil {
		return "nginx " + string(m[1])
	}
	return "nginx"
}

// dur rounds wrk's figures (given to 2 decimals) for the table.
func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func rate(r float64) string {
	if r >= 1000 {
		return fmt.Sprintf("%.1fk", r/1000)
	}
	return fmt.Sprintf("%.0f", r)
}

func errNote(c cell) string {
	if c.errors == 0 {
		return ""
	}
	return fmt.Sprintf(" ⚠ %d errors", c.errors)
}

const begin, end = "<!-- bench:begin (written by make bench) -->", "<!-- bench:end -->"

// writeSection replaces the text between the markers in path (or adds it
// after the title).
func writeSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	block := begin + "\n" + section + end
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + block + s[j+len(end):]
	} else {
		nl := strings.Index(s, "\n\n")
		s = s[:nl+2] + "## Side by side: direct, nginx and Delta (`make bench`)\n\n" + block + "\n\n" + s[nl+2:]
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitDial(addr string, d time.Duration) error {
	return waitCond(d, addr+" to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func waitCond(d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling other processes: they send no event
	}
	return nil
}

// humanSize writes a byte count: "1 GiB", "64 MiB".
func humanSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// startCaddy runs Caddy (Debian's) as two reverse_proxy hops to the owner
// app, plain and with TLS 1.3 on the middle hop, as startNginx does nginx;
// its admin endpoint and automatic HTTPS are off, its state under root.
func startCaddy(root, appAddr string) (plain, tls target, version string, stop func(), err error) {
	dir := filepath.Join(root, "caddy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plain, tls, "", nil, err
	}
	certFile, keyFile, err := selfSigned(dir)
	if err != nil {
		return plain, tls, "", nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return plain, tls, "", nil, err
		}
	}
	conf := fmt.Sprintf(`{
	admin off
	auto_https off
	log {
		level ERROR
	}
}
http://127.0.0.1:%[1]d {
	reverse_proxy 127.0.0.1:%[2]d
}
http://127.0.0.1:%[2]d {
	reverse_proxy %[5]s
}
http://127.0.0.1:%[3]d {
	reverse_proxy https://127.0.0.1:%[4]d {
		transport http {
			tls_insecure_skip_verify
		}
	}
}
https://127.0.0.1:%[4]d {
	tls %[6]s %[7]s {
		protocols tls1.3
	}
	reverse_proxy %[5]s
}
`, ports[0], ports[1], ports[2], ports[3], appAddr, certFile, keyFile)
	confFile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return plain, tls, "", nil, err
	}
	out, err := exec.Command("caddy", "version").Output()
	if err != nil {
		return plain, tls, "", nil, fmt.Errorf("caddy version: %w", err)
	}
	version = strings.Fields(string(out) + " ?")[0]
	cmd := exec.Command("caddy", "run", "--adapter", "caddyfile", "--config", confFile)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return plain, tls, "", nil, fmt.Errorf("start caddy: %w", err)
	}
	stop = func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
	for _, p := range []int{ports[0], ports[2]} {
		if err := waitDial(fmt.Sprintf("127.0.0.1:%d", p), 10*time.Second); err != nil {
			stop()
			return plain, tls, "", nil, fmt.Errorf("caddy did not start: %v\n%s", err, stderr.String())
		}
	}
	pids := []int{cmd.Process.Pid}
	plain = target{name: "Caddy " + version + " (2 hops)", role: roleCaddy, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[0]), pids: pids}
	tls = target{name: "Caddy " + version + " (2 hops, TLS between)", role: roleCaddyTLS, readURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), callURL: fmt.Sprintf("http://127.0.0.1:%d/c", ports[2]), pids: pids}
	return plain, tls, version, stop, nil
}

// revalFigure is a stored answer read again through a tailnet pair of
// Deltas on the tailnet road: the mean time of a read after the first,
// and the body bytes the owner app sent for each.
type revalFigure struct {
	target    string
	size      int64
	reads     int
	mean      time.Duration
	bodyBytes int64
	err       error
}

func (f revalFigure) String() string {
	if f.err != nil {
		return "failed: " + f.err.Error()
	}
	return fmt.Sprintf("%s a read, the owner app sent %d body bytes a read", f.mean, f.bodyBytes)
}

// revalidate reads /v/size through tg on the tailnet road once, then reads
// times more, each a whole answer checked for its length.
func revalidate(ctx context.Context, tg target, size int64, reads int) revalFigure {
	f := revalFigure{target: tg.name, size: size, reads: reads}
	client := &http.Client{}
	one := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, tg.readURL+"/v/"+strconv.FormatInt(size, 10), nil)
		if err != nil {
			return err
		}
		for _, h := range tg.headers {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(k, strings.TrimSpace(v))
		}
		req.Header.Set("X-Delta-Route", "tailnet")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		switch {
		case err != nil:
			return err
		case resp.StatusCode != 200 || n != size:
			return fmt.Errorf("answered %s with %d bytes of %d", resp.Status, n, size)
		case resp.Header.Get("X-Delta-Route") != "tailnet":
			return fmt.Errorf("came over %q, not the tailnet road", resp.Header.Get("X-Delta-Route"))
		}
		return nil
	}
	if f.err = one(); f.err != nil {
		return f
	}
	sent := validatedBytes.Load()
	start := time.Now()
	for range reads {
		if f.err = one(); f.err != nil {
			return f
		}
	}
	f.mean = time.Since(start) / time.Duration(reads)
	f.bodyBytes = (validatedBytes.Load() - sent) / int64(reads)
	return f
}

// copyFile copies the program at from to to, executable.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", from, err)
	}
	return out.Close()
}
