// Package forward is Delta's forwards (DESIGN §2b): a loopback door of
// this computer for one peer's app, as `ssh -L` and `kubectl
// port-forward` open one, so that an app that can be given only a URL
// reaches another computer's app through Delta. Every request to a
// forward goes to its app on its peer, path and query unchanged, with no
// prefix and no token, through the same reads, calls and sessions as
// /v1/peers/… (the gateway's Serve).
//
// A forward guards itself first: a Host that is not its own (DNS
// rebinding), a page of another site in a browser (Origin,
// Sec-Fetch-Site), and, when asked, a request without the local token are
// refused, and nothing is sent. The forwards are kept in
// <state>/forwards.json and opened again on the same address at every
// start.
package forward

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/doors"
	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/gateway/net/h1server"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// File is the state folder's list of forwards.
const File = "forwards.json"

// DefaultListen is where a forward listens when no address is given: a
// free port on 127.0.0.1.
const DefaultListen = "127.0.0.1:0"

// Spec is one forward as it is kept.
type Spec struct {
	Peer string `json:"peer"`
	App  string `json:"app"`
	// Listen is the address as bound (the port a port 0 was given).
	Listen string `json:"listen"`
	// Token reports whether the forward asks for Secret, its own secret
	// (never the local token: whoever holds the forward's port while
	// Delta is down would have it, issue 63 D5).
	Token  bool   `json:"token,omitempty"`
	Secret string `json:"secret,omitempty"`
	// Label is the random label of the forward's own name,
	// APP.PEER.LABEL.localhost (Name), kept so that its name, and a
	// browser's cookies for it, stay the same across starts.
	Label string `json:"label,omitempty"`
	// Timeout is the forward's own wait for an answer's head when its
	// client says no X-Delta-Timeout, in X-Delta-Timeout's form; "" for
	// none: the owner app's own timeout, else no limit (DESIGN §2c).
	Timeout   string    `json:"timeout,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func (s Spec) key() string { return s.Peer + "/" + s.App }

// Wait is how long a request through the forward may wait for its
// answer's head, when its client says no X-Delta-Timeout: the forward's
// Timeout, else the owner app's own, else no limit.
func (s Spec) Wait() proto.Wait {
	d, _ := proto.ParseLimit(s.Timeout) // checked by Add and load
	return proto.Wait{Said: max(d, 0)}
}

// Admitted is what a request let in by a forward's guard carries on.
type Admitted struct {
	// Host is the Host the client used: the owner app gets it.
	Host string
	// Cookie is what of the client's cookies goes to the owner app
	// (Cookies), "" for none.
	Cookie string
	// Authorization is the client's own Authorization header when the
	// forward does not ask for the token (it is the app's then: restic's
	// rest-server password, a WebDAV login), "" otherwise.
	Authorization string
}

// Config configures a Set.
type Config struct {
	// Dir is the state folder, which holds File. Required.
	Dir string
	// Serve carries an admitted request to s's app on s's peer. Required.
	Serve func(w http.ResponseWriter, r *http.Request, s Spec, a Admitted)
	// PageCookie is the name of Delta's own page cookie, which never
	// reaches an app.
	PageCookie string
	// Limits are the doors' limits. ErrLog receives the servers' errors;
	// Log what the forwards do. If nil, nothing is logged.
	Limits doors.Limits
	ErrLog *log.Logger
	Log    *slog.Logger
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// Set is this computer's forwards.
type Set struct {
	cfg Config

	mu     sync.Mutex
	fws    map[string]*fw // by peer/app
	closed bool
	wg     sync.WaitGroup
}

// fw is one forward: listening, or with the error that keeps it closed.
type fw struct {
	spec Spec
	door door
	ln   net.Listener
	srv  *h1server.Server
	err  error
}

// Errors a caller of Add or Remove branches on.
var (
	ErrNotFound = errors.New("no such forward")
	ErrInvalid  = errors.New("not a forward")
)

// New returns a Set with no forward open; Start opens the kept ones.
func New(cfg Config) *Set {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Set{cfg: cfg, fws: map[string]*fw{}}
}

// Start opens every forward kept in File, each on its address. One that
// cannot be opened (its port taken) is listed with why, and Start says so
// in its error; the others open. A File that cannot be read is left as
// it is and named in the error.
func (s *Set) Start() error {
	specs, err := s.load()
	if err != nil {
		return err
	}
	var failed []string
	s.mu.Lock()
	defer s.mu.Unlock()
	secrets, labels := 0, 0
	for i := range specs {
		if specs[i].Token && specs[i].Secret == "" {
			// Kept before forwards had secrets of their own (they took
			// the local token): one of its own now, which --list shows.
			specs[i].Secret = rand.Text()
			secrets++
		}
		if !labelRe.MatchString(specs[i].Label) {
			// Kept before forwards' names had labels (or its label was
			// edited into one that is not a host label): one now. A
			// browser's navigation to its old name is sent on to the new.
			specs[i].Label = newLabel()
			labels++
		}
	}
	for _, sp := range specs {
		f, err := s.open(sp)
		if err != nil {
			f = &fw{spec: sp, err: err}
			failed = append(failed, fmt.Sprintf("%s on %s: %v", sp.key(), sp.Listen, err))
		}
		s.fws[sp.key()] = f
	}
	if secrets+labels > 0 {
		if err := s.save(); err != nil {
			failed = append(failed, err.Error())
		}
		s.cfg.Log.Warn("kept forwards given what they lacked (kept before Delta gave them): a secret of their own where the local token was asked for, and a label in their browser names; delta forward --list shows both",
			"new_secrets", secrets, "new_labels", labels)
	}
	if len(failed) > 0 {
		return fmt.Errorf("forwards not opened (delta forward PEER/APP opens one again): %s", strings.Join(failed, "; "))
	}
	return nil
}

func (s *Set) load() ([]Spec, error) {
	b, err := os.ReadFile(filepath.Join(s.cfg.Dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("could not read the forwards (%w)", err)
	}
	var kept struct {
		Forwards []Spec `json:"forwards"`
	}
	if err := json.Unmarshal(b, &kept); err != nil {
		return nil, fmt.Errorf("%s is not a list of forwards (%v); none was opened, and the file is left as it is", filepath.Join(s.cfg.Dir, File), err)
	}
	var out []Spec
	for _, sp := range kept.Forwards {
		if _, err := checkSpec(sp.Peer, sp.App, sp.Listen); err != nil {
			s.cfg.Log.Warn("a kept forward is not valid and is not opened", "forward", sp.key(), "err", err)
			continue
		}
		if _, err := checkTimeout(sp.Timeout); err != nil {
			s.cfg.Log.Warn("a kept forward is not valid and is not opened", "forward", sp.key(), "err", err)
			continue
		}
		out = append(out, sp)
	}
	return out, nil
}

// save writes the forwards to File (atomically); the caller holds s.mu.
func (s *Set) save() error {
	var kept struct {
		Forwards []Spec `json:"forwards"`
	}
	kept.Forwards = []Spec{}
	for _, f := range s.fws {
		kept.Forwards = append(kept.Forwards, f.spec)
	}
	slices.SortFunc(kept.Forwards, func(a, b Spec) int { return strings.Compare(a.key(), b.key()) })
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(s.cfg.Dir, File)
	tmp := path + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("could not write %s (%w)", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("could not write %s (%w)", path, err)
	}
	return nil
}

// checkSpec checks a forward's names and address, and returns the address
// to listen on (localhost is 127.0.0.1).
func checkSpec(peer, app, listen string) (string, error) {
	if err := proto.CheckName("peer", peer); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := proto.CheckName("app", app); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%w: address %q is not HOST:PORT (%v)", ErrInvalid, listen, err)
	}
	if port, err := strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
		return "", fmt.Errorf("%w: address %q has port %q, not one of 0-65535", ErrInvalid, listen, p)
	}
	if h == "localhost" {
		h = "127.0.0.1"
	}
	if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%w: address %q is not on a loopback address (127.0.0.0/8, ::1 or localhost): a forward lets in whoever reaches it without a token, so it listens only where this computer alone can", ErrInvalid, listen)
	}
	return net.JoinHostPort(h, p), nil
}

// checkTimeout checks a forward's timeout and returns it as kept: seconds
// as X-Delta-Timeout writes them, or "" for none ("none" is none).
func checkTimeout(v string) (string, error) {
	d, err := proto.ParseLimit(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if d < 0 {
		return "", nil
	}
	return proto.FormatLimit(d), nil
}

// open listens for sp and serves it; the caller holds s.mu.
func (s *Set) open(sp Spec) (*fw, error) {
	ln, err := net.Listen("tcp", sp.Listen)
	if err != nil {
		return nil, err
	}
	ta := ln.Addr().(*net.TCPAddr)
	sp.Listen = ta.String()
	f := &fw{spec: sp, ln: ln, door: door{ip: ta.IP, port: ta.Port, name: Name(sp.Peer, sp.App, sp.Label), plain: Name(sp.Peer, sp.App, "")}}
	f.srv = doors.Server(s.handler(f), s.cfg.ErrLog, s.cfg.Limits)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.srv.Serve(ln)
	}()
	s.cfg.Log.Info("forward open", "forward", sp.key(), "url", info(f).URL, "token", sp.Token)
	return f, nil
}

// Add opens a forward to app on peer as req says: on req.Listen ("" keeps
// the address it has, or DefaultListen), asking for the token if
// req.Token, with its own timeout req.Timeout; and keeps it. A forward to
// the same app is changed: moved to the new address (opened there before
// the old one closes), or only its token and timeout changed.
func (s *Set) Add(peer, app string, req localapi.ForwardRequest) (localapi.Forward, error) {
	listen, token := req.Listen, req.Token
	timeout, err := checkTimeout(req.Timeout)
	if err != nil {
		return localapi.Forward{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return localapi.Forward{}, errors.New("this Delta is stopping")
	}
	old := s.fws[peer+"/"+app]
	if listen == "" {
		listen = DefaultListen
		if old != nil {
			listen = old.spec.Listen
		}
	}
	addr, err := checkSpec(peer, app, listen)
	if err != nil {
		return localapi.Forward{}, err
	}
	secret := ""
	if token {
		secret = rand.Text() // a secret of its own
		if old != nil && old.spec.Secret != "" {
			secret = old.spec.Secret // kept while it asks for one
		}
	}
	if old != nil && old.ln != nil && sameAddr(old.spec.Listen, addr) {
		prev := old.spec
		old.spec.Token, old.spec.Secret, old.spec.Timeout = token, secret, timeout
		if err := s.save(); err != nil {
			old.spec = prev
			return localapi.Forward{}, err
		}
		return info(old), nil
	}
	label := newLabel()
	if old != nil && old.spec.Label != "" {
		label = old.spec.Label // its name, and a browser's cookies for it, stay
	}
	sp := Spec{Peer: peer, App: app, Listen: addr, Token: token, Secret: secret, Label: label, Timeout: timeout, CreatedAt: s.cfg.Now().UTC().Truncate(time.Second)}
	if old != nil && old.ln != nil {
		// The old one holds its port until the new one is open.
		if p := portOf(addr); p != 0 && p == portOf(old.spec.Listen) {
			s.stop(old)
			old.ln = nil
		}
	}
	f, err := s.open(sp)
	if err != nil {
		if old != nil && old.ln == nil && old.err == nil {
			if again, err2 := s.open(old.spec); err2 == nil {
				s.fws[old.spec.key()] = again
			} else {
				old.err = err2
			}
		}
		return localapi.Forward{}, fmt.Errorf("could not listen on %s for %s/%s (%w)", addr, peer, app, err)
	}
	s.fws[sp.key()] = f
	if err := s.save(); err != nil {
		s.stop(f)
		switch {
		case old == nil:
			delete(s.fws, sp.key())
		case old.ln == nil && old.err == nil:
			// Closed to move it to the same port: it stays closed, and
			// says why.
			old.err = fmt.Errorf("closed to move it to %s, which could not be kept (%v)", addr, err)
			s.fws[sp.key()] = old
		default:
			s.fws[sp.key()] = old
		}
		return localapi.Forward{}, err
	}
	if old != nil && old.ln != nil {
		s.stop(old)
	}
	return info(f), nil
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// sameAddr reports whether have (an address as bound) is want (as asked:
// port 0 is any port on the same address).
func sameAddr(have, want string) bool {
	hh, hp, _ := net.SplitHostPort(have)
	wh, wp, _ := net.SplitHostPort(want)
	return net.ParseIP(hh).Equal(net.ParseIP(wh)) && (wp == "0" || wp == hp)
}

// Remove closes the forward to app on peer and forgets it.
func (s *Set) Remove(peer, app string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.fws[peer+"/"+app]
	if !ok {
		return fmt.Errorf("%w to %s/%s (delta forward --list shows them)", ErrNotFound, peer, app)
	}
	delete(s.fws, peer+"/"+app)
	if err := s.save(); err != nil {
		s.fws[peer+"/"+app] = f
		return err
	}
	s.stop(f)
	s.cfg.Log.Info("forward removed", "forward", f.spec.key())
	return nil
}

// stop closes f's listener and its connections.
func (s *Set) stop(f *fw) {
	if f.srv != nil {
		f.srv.Close()
	}
}

// List is every forward, by peer and app.
func (s *Set) List() []localapi.Forward {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []localapi.Forward{}
	for _, f := range s.fws {
		out = append(out, info(f))
	}
	slices.SortFunc(out, func(a, b localapi.Forward) int {
		return strings.Compare(a.Peer+"/"+a.App, b.Peer+"/"+b.App)
	})
	return out
}

// Addrs are the addresses the open forwards listen on.
func (s *Set) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []net.Addr
	for _, f := range s.fws {
		if f.ln != nil {
			out = append(out, f.ln.Addr())
		}
	}
	return out
}

// Servers are the open forwards' servers, for a graceful shutdown
// beside the local API's (the gateway's Close); Close closes them after.
func (s *Set) Servers() []*h1server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*h1server.Server
	for _, f := range s.fws {
		if f.srv != nil && f.ln != nil {
			out = append(out, f.srv)
		}
	}
	return out
}

// Close closes every forward (they stay kept for the next start) and
// waits for their servers.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	for _, f := range s.fws {
		s.stop(f)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func info(f *fw) localapi.Forward {
	v := localapi.Forward{Peer: f.spec.Peer, App: f.spec.App, Listen: f.spec.Listen, Token: f.spec.Token, Secret: f.spec.Secret, Timeout: f.spec.Timeout,
		Open: f.ln != nil, CreatedAt: f.spec.CreatedAt, URL: "http://" + f.spec.Listen + "/"}
	if f.err != nil {
		v.Error = f.err.Error()
	}
	if n := Name(f.spec.Peer, f.spec.App, f.spec.Label); n != "" {
		v.BrowserURL = "http://" + net.JoinHostPort(n, strconv.Itoa(portOf(f.spec.Listen))) + "/"
	}
	return v
}

// handler is f's guard, then the gateway's Serve.
func (s *Set) handler(f *fw) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gcpace.Busy() // an app's request: the collector's busy pace
		s.mu.Lock()
		sp := f.spec
		s.mu.Unlock()
		kind, ref := f.door.check(r)
		if ref != nil {
			doors.RefuseAndClose(w)
			proto.WriteError(w, ref.Status, localapi.ErrorBody{Error: string(localapi.Forbidden), Detail: proto.NotSent(ref.Why, ""), Peer: sp.Peer}.With(localapi.NothingSent))
			return
		}
		a := Admitted{Host: r.Host}
		if sp.Token {
			if why := doors.CheckSecret(r.Header.Get("Authorization"), sp.Secret, "this forward's secret (delta forward --list shows it)"); why != "" {
				doors.RefuseAndClose(w)
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Basic realm="Delta forward %s/%s"`, sp.Peer, sp.App))
				proto.WriteError(w, http.StatusUnauthorized, localapi.ErrorBody{Error: string(localapi.Unauthorized), Detail: proto.NotSent("this forward asks for its secret: "+why, ""), Peer: sp.Peer}.With(localapi.NothingSent))
				return
			}
		} else {
			a.Authorization = r.Header.Get("Authorization")
		}
		browser := fromBrowser(r)
		if kind == bareHost && browser && f.door.name != "" && r.Header.Get("Sec-Fetch-Mode") == "navigate" &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead) {
			// A browser keeps one set of cookies for every port of a
			// loopback address: sent on to the forward's own name, its
			// app's cookies are its own.
			to := "http://" + net.JoinHostPort(f.door.name, strconv.Itoa(f.door.port)) + r.URL.RequestURI()
			w.Header().Set(localapi.HeaderOutcome, Redirected)
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		if !(kind == bareHost && browser) {
			a.Cookie = Cookies(r.Header.Values("Cookie"), s.cfg.PageCookie)
		}
		s.cfg.Serve(w, r, sp, a)
	})
}

// Redirected is the outcome of a browser's navigation to a forward's bare
// address, sent on to the forward's own name (307): nothing was sent.
const Redirected = "redirected"
