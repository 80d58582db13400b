// Package kit is what an app imports to use Delta: a client of its own
// computer's Delta (reads, at-most-once calls with typed outcomes, settling
// an unknown outcome) and, for apps that own data, a middleware that admits
// only requests forwarded by Delta.
//
// A caller finds its Delta through the state folder's local.json and
// local-token (docs/design.md §7), sends reads on pooled connections and each call
// on a connection of its own, and learns which of Delta's three things
// happened from the error's type:
//
//	c, err := kit.Open("") // the default state folder, or DELTA_STATE_DIR
//	if err != nil {
//		log.Fatal(err)
//	}
//	id := kit.NewRequestID()
//	saveOutbox(id, note) // the id is known before the call leaves: keep it first
//	ans, err := c.Call(ctx, "studio", "notes", "POST", "/notes", note, &kit.CallOptions{RequestID: id})
//	var unknown *kit.OutcomeUnknown
//	var unavailable *kit.Unavailable
//	switch {
//	case err == nil:
//		fmt.Println("studio's notes answered", ans.Status) // its own answer, any status
//	case errors.As(err, &unavailable):
//		fmt.Println("not carried out:", unavailable.Detail) // safe to try again later
//	case errors.As(err, &unknown):
//		rec, err := c.WaitSettled(ctx, id) // Delta asks studio until it knows
//		if err == nil {
//			fmt.Println("settled:", rec.State) // carried_out, not_carried_out or needs_person
//		}
//	default:
//		log.Print(err) // *kit.DeltaDown, *kit.Conflict: nothing was sent
//	}
//
// An app that owns data registers with its Delta (Client.RegisterApp) and
// wraps its handler in Owner, which checks X-Delta-Forward-Secret and hands
// the handler the request id and the calling computer (FromRequest). A
// complete owner app is examples/notes.
package kit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// Headers of Delta's local API (docs/protocol.md), as localapi defines
// them once for the daemon and every kit.
const (
	HeaderOutcome   = localapi.HeaderOutcome
	HeaderRequestID = localapi.HeaderRequestID
	HeaderTimeout   = localapi.HeaderTimeout
	HeaderRoute     = localapi.HeaderRoute
	HeaderApp       = localapi.HeaderApp
	HeaderReplayed  = localapi.HeaderReplayed
	HeaderStale     = localapi.HeaderStale
	HeaderCaller    = localapi.HeaderCaller
	HeaderSecret    = localapi.HeaderSecret
)

// Client talks to this computer's Delta. It is safe for concurrent use.
type Client struct {
	// StateDir is the running Delta's state folder.
	StateDir string
	// App names the calling app to the owner (X-Delta-App), in the menu,
	// the page, `delta calls` and the owner's receipts. Empty means the
	// program's own name (its executable's, as ProgramName says); an
	// X-Delta-App in a request's own headers wins over both.
	App string
	// Now, if not nil, is the clock the kit checks a read ticket's expiry
	// with (tests); time.Now if nil.
	Now func() time.Time

	reads *http.Client // pooled connections
	calls *http.Client // a new connection for every call

	mu    sync.Mutex
	url   string // from local.json
	token string
}

// Open returns a client of the Delta whose state folder is stateDir; ""
// is the default folder (DELTA_STATE_DIR, else docs/design.md §7's for this OS).
// It reads local.json and the token. When Delta is not running it returns
// a *DeltaDown that names the folder it looked in, unless Delta left
// what reads need to go on without it (direct.json): then the client is
// returned, its reads go directly to the peer, and everything else is
// answered *DeltaDown.
func Open(stateDir string) (*Client, error) {
	if stateDir == "" {
		stateDir = localapi.DefaultStateDir()
	}
	if stateDir == "" {
		return nil, &DeltaDown{Err: errors.New("no state folder: set DELTA_STATE_DIR (HOME is not set either)")}
	}
	c := &Client{StateDir: stateDir}
	// Every new connection to the local API is proven to be this
	// folder's Delta before the token or anything of the app's goes on
	// it (proof.go).
	c.reads = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second, DialContext: c.dialProven}}
	c.calls = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: c.dialProven}}
	if _, _, err := c.endpoint(false); err != nil {
		if _, derr := os.Stat(filepath.Join(stateDir, localapi.DirectFile)); derr == nil {
			return c, nil // down, and readable around
		}
		return nil, err
	}
	return c, nil
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.reads.CloseIdleConnections() }

// URL is the running Delta's local API, as local.json says.
func (c *Client) URL() string {
	u, _, _ := c.endpoint(false)
	return u
}

// endpoint returns Delta's URL and token, read again from the state folder
// if reload (Delta may have restarted on another port).
func (c *Client) endpoint(reload bool) (string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.url != "" && !reload {
		return c.url, c.token, nil
	}
	lf, err := localapi.ReadLocal(c.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(c.StateDir); errors.Is(serr, os.ErrNotExist) {
			return "", "", &DeltaDown{StateDir: c.StateDir, Err: errors.New("the folder does not exist: no Delta has run with it (a mistyped state folder?)")}
		}
		return "", "", &DeltaDown{StateDir: c.StateDir, Err: errors.New("it has no local.json, which a running Delta writes there")}
	}
	if err != nil {
		return "", "", &DeltaDown{StateDir: c.StateDir, Err: err}
	}
	if leftBehind(c.StateDir, lf) {
		return "", "", &DeltaDown{StateDir: c.StateDir, URL: lf.URL, Err: errLeftBehind}
	}
	tok, err := localapi.ReadToken(c.StateDir)
	if err != nil {
		return "", "", &DeltaDown{StateDir: c.StateDir, URL: lf.URL, Err: err}
	}
	c.url, c.token = lf.URL, tok
	return c.url, c.token, nil
}

// NewRequestID mints a request id: a random UUID (version 4).
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Answer is the owner app's own answer, whatever its status.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Road is the road it came over ("thunderbolt", "lan", "tailnet").
	Road string
	// RequestID is the call's request id (calls only).
	RequestID string
	// Replayed: the call had been made before under this id, and this is
	// the answer recorded then (nothing was sent again).
	Replayed bool
	// Direct, for reads: this computer's Delta was down, and the kit read
	// the peer directly over its lan or thunderbolt road (Road).
	Direct bool
	// Stale, for reads: the peer could not be reached and this is a cached
	// answer; StaleReason says why, Age how old it is.
	Stale       bool
	StaleReason string
	Age         time.Duration
}

// ReadOptions adjust a read. The zero value is the default.
type ReadOptions struct {
	// Route pins the road ("thunderbolt", "lan", "tailnet").
	Route string
	// Timeout is how long the owner app may take to begin its answer
	// (X-Delta-Timeout). When 0, the owner app's own timeout applies,
	// else Delta's default of 30 s. It never bounds the body: once the
	// answer has begun, it lives as long as the app sends it and the
	// context lasts (docs/design.md §2c).
	Timeout time.Duration
	// Header holds extra request headers (Accept, Cache-Control, …).
	Header http.Header
	// Progress, if not nil, is told the bytes of the answer's body read so
	// far and its length (-1 if unknown) as they arrive.
	Progress func(done, total int64)
}

// CallOptions adjust a call. The zero value is the default.
type CallOptions struct {
	// RequestID names the call. If empty, Call mints one (NewRequestID);
	// mint it yourself and keep it before calling when the app must find
	// the call again after a crash.
	RequestID string
	// Timeout is how long the owner app may take to begin its answer
	// once it has the whole body (X-Delta-Timeout). When 0, the owner
	// app's own timeout applies, else Delta's default of 30 s.
	Timeout time.Duration
	// Route pins the road.
	Route string
	// Header holds extra request headers (Content-Type, …).
	Header http.Header
	// Progress, if not nil, is told the bytes of the body sent so far and
	// its size (-1 if unknown) as they leave.
	Progress func(done, total int64)
}

// Get reads path from app on peer (GET), on pooled connections, and holds
// the whole answer in memory: for answers of any size, Stream. A read is
// safe: Delta may retry it on a fresh road, resume its answer on another
// road when the first is lost, and serve a cached answer marked Stale
// when the peer cannot be reached. Errors: *Unavailable (no answer;
// Outcome says why), *Cut (the answer broke off: what came is not the
// whole), *DeltaDown.
func (c *Client) Get(ctx context.Context, peer, app, path string, opt *ReadOptions) (*Answer, error) {
	r, err := c.Stream(ctx, peer, app, path, opt)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	a := &r.Answer
	a.Body, err = io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Response is an owner app's answer whose body streams: read Body as it
// arrives, and close it. Answer holds the status and headers (its Body is
// nil). Body returns a *Cut error, never io.EOF, when the answer broke off
// before its end: an answer that ends cleanly is whole.
type Response struct {
	Answer
	Body io.ReadCloser
}

// Stream reads path from app on peer (GET) as Get does, and returns the
// answer with its body still to read: nothing is held whole, whatever its
// size.
func (c *Client) Stream(ctx context.Context, peer, app, path string, opt *ReadOptions) (*Response, error) {
	if opt == nil {
		opt = &ReadOptions{}
	}
	h := opt.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	setCommon(h, c.App, opt.Route, opt.Timeout)
	resp, _, err := c.send(ctx, c.reads, http.MethodGet, peerPath(peer, app, path), nil, 0, h)
	var down *DeltaDown
	if errors.As(err, &down) {
		// A read goes on while this computer's Delta is down: directly to
		// the peer, with the read ticket Delta left (writes never do).
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		resp, err = c.readDirect(ctx, down, peer, app, path, h)
	}
	if err != nil {
		return nil, err
	}
	return streamOrError(resp, "", opt.Progress)
}

// Call sends method to path of app on peer, at most once, on a connection
// of its own, with body whole in memory; CallStream sends a body of any
// size. method is any method that is not a read (POST, PUT, PATCH,
// DELETE, PROPFIND, …). The result is one of:
//   - an *Answer, nil: the owner app's answer (any HTTP status);
//   - *Unavailable: it was not carried out: nothing was sent
//     (NothingSent), or the owner proved it did not act; Detail says why;
//   - *BadInput: Delta (or the kit) refused it as malformed; not carried
//     out;
//   - *OutcomeUnknown: it left and no answer came; Delta never sends it
//     again and reconciles it; WaitSettled waits for what happened;
//   - *Conflict: the request id is in use for another request;
//   - *DeltaDown: this computer's Delta is not running; nothing was
//     sent.
func (c *Client) Call(ctx context.Context, peer, app, method, path string, body []byte, opt *CallOptions) (*Answer, error) {
	return c.CallStream(ctx, peer, app, method, path, bytes.NewReader(body), int64(len(body)), opt)
}

// CallStream is Call with a body read from body as it is sent: size is
// its length, or -1 if unknown. Delta streams it to the owner, which
// forwards it to its app only once it has arrived whole; it is never held
// whole in memory on either computer.
func (c *Client) CallStream(ctx context.Context, peer, app, method, path string, body io.Reader, size int64, opt *CallOptions) (*Answer, error) {
	if opt == nil {
		opt = &CallOptions{}
	}
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace, "PROPFIND", "REPORT", "SEARCH", "QUERY":
		return nil, &BadInput{Detail: fmt.Sprintf("%q is not a call's method; reads (safe methods) go through Get, or plain HTTP to a forward; nothing was sent", method), RequestID: opt.RequestID, NothingSent: true}
	}
	id := opt.RequestID
	if id == "" {
		id = NewRequestID()
	}
	h := opt.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(HeaderRequestID, id)
	setCommon(h, c.App, opt.Route, opt.Timeout)
	if opt.Progress != nil && body != nil {
		body = &progress{r: body, counter: counter{total: size, report: opt.Progress}}
	}
	resp, handedOver, err := c.send(ctx, c.calls, method, peerPath(peer, app, path), body, size, h)
	if err != nil {
		var down *DeltaDown
		if errors.As(err, &down) {
			down.RequestID = id
			return nil, down
		}
		if handedOver {
			return nil, &OutcomeUnknown{RequestID: id, Peer: peer, Detail: fmt.Sprintf(
				"the call was handed to this computer's Delta and no answer came back from it (%v); Delta may have sent it, and its record under request id %s will say what happened (Delta, once running, never sends it again and asks the owner)", err, id)}
		}
		return nil, err
	}
	r, err := streamOrError(resp, id, nil)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	a := &r.Answer
	a.Body, err = io.ReadAll(r.Body)
	if err != nil {
		// Recorded before it was told: WaitSettled reads it back.
		return nil, &OutcomeUnknown{RequestID: a.RequestID, Peer: peer, Detail: fmt.Sprintf("the owner's answer was recorded, but reading it from the local Delta failed (%v): its record under request id %s has it", err, a.RequestID)}
	}
	return a, nil
}

// send makes one request to the local API. handedOver reports whether a
// connection to Delta was made (then a call may have been handed over).
// A failed connect is a *DeltaDown, after one fresh look at
// local.json (Delta may have restarted elsewhere: nothing was sent, so a
// second connect is safe). body is read at most once.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, body io.Reader, size int64, h http.Header) (*http.Response, bool, error) {
	for reload := false; ; reload = true {
		base, tok, err := c.endpoint(reload)
		if err != nil {
			return nil, false, err
		}
		var connected bool
		tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }})
		req, err := http.NewRequestWithContext(tctx, method, base+path, nil)
		if err != nil {
			return nil, false, fmt.Errorf("kit: %w", err)
		}
		if body != nil && size != 0 {
			// Not closed by the client: the app's reader stays the app's.
			req.Body, req.ContentLength = io.NopCloser(body), size
		}
		req.Header = h.Clone()
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err == nil {
			return resp, true, nil
		}
		if connected || ctx.Err() != nil {
			return nil, connected, err
		}
		if !reload {
			continue
		}
		var nd *NotDelta
		if errors.As(err, &nd) {
			err = nd
		}
		return nil, false, &DeltaDown{StateDir: c.StateDir, URL: base, Err: err}
	}
}

func setCommon(h http.Header, app, route string, timeout time.Duration) {
	if app == "" {
		app = ProgramName()
	}
	if h.Get(HeaderApp) == "" && app != "" {
		h.Set(HeaderApp, app)
	}
	if route != "" {
		h.Set(HeaderRoute, route)
	}
	if timeout > 0 {
		h.Set(HeaderTimeout, strconv.FormatFloat(min(timeout.Seconds(), 600), 'f', 3, 64))
	}
}

// peerPath is the local API path of path on app at peer; path may carry a
// query.
func peerPath(peer, app, path string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return localapi.PeerPath(peer, app) + path
}

// streamOrError turns a local API answer into a Response whose body
// streams, or a typed error (reading, and closing, Delta's own JSON).
func streamOrError(resp *http.Response, id string, report func(done, total int64)) (*Response, error) {
	outcome := resp.Header.Get(HeaderOutcome)
	if rid := resp.Header.Get(HeaderRequestID); rid != "" {
		id = rid
	}
	switch localapi.Outcome(outcome) {
	case localapi.Answered, localapi.Stale:
		a := Answer{Status: resp.StatusCode, Header: resp.Header, Road: resp.Header.Get(HeaderRoute),
			RequestID: id, Replayed: resp.Header.Get(HeaderReplayed) == "true", Direct: resp.Header.Get(HeaderDirect) == "true"}
		if localapi.Outcome(outcome) == localapi.Stale {
			a.Stale, a.StaleReason = true, resp.Header.Get(HeaderStale)
			if s, err := strconv.Atoi(resp.Header.Get("Age")); err == nil {
				a.Age = time.Duration(s) * time.Second
			}
		}
		return &Response{Answer: a, Body: &body{progress: progress{r: resp.Body, counter: counter{total: resp.ContentLength, report: report}}, c: resp.Body}}, nil
	case "":
		resp.Body.Close()
		return nil, fmt.Errorf("kit: %s answered %s without %s: it is not Delta's local API", resp.Request.URL.Host, resp.Status, HeaderOutcome)
	}
	defer resp.Body.Close()
	var eb localapi.ErrorBody
	// Without Delta's JSON the status still says what happened.
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&eb)
	if eb.Detail == "" {
		eb.Detail = fmt.Sprintf("Delta answered %s (%s)", resp.Status, outcome)
	}
	if eb.RequestID != "" {
		id = eb.RequestID
	}
	switch localapi.Outcome(outcome) {
	case localapi.Unknown:
		return nil, &OutcomeUnknown{RequestID: id, Peer: eb.Peer, Detail: eb.Detail}
	case localapi.Conflict:
		return nil, &Conflict{RequestID: id, Detail: eb.Detail}
	case localapi.BadRequest:
		return nil, &BadInput{Status: resp.StatusCode, Detail: eb.Detail, RequestID: id, NothingSent: eb.Sent != nil && !*eb.Sent}
	}
	return nil, &Unavailable{Outcome: outcome, Status: resp.StatusCode, Detail: eb.Detail, RequestID: id, Peer: eb.Peer, Road: eb.Road,
		NothingSent: eb.Sent != nil && !*eb.Sent, NotCarriedOut: eb.CarriedOut != nil && !*eb.CarriedOut}
}

// counter counts a body's bytes as they pass, and tells report (if not
// nil) each time some do, and at the end.
type counter struct {
	n      int64
	total  int64 // -1 if unknown
	report func(done, total int64)
}

func (c *counter) count(n int, err error) {
	c.n += int64(n)
	if c.report != nil && (n > 0 || err == io.EOF) {
		c.report(c.n, c.total)
	}
}

// progress reports what a body has passed: a call's as it is sent, an
// answer's as it is read.
type progress struct {
	r io.Reader
	counter
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.count(n, err)
	return n, err
}

// body is an answer's body as the kit passes it on: an answer that broke
// off is a *Cut, never a clean end.
type body struct {
	progress
	c io.Closer
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.progress.Read(p)
	if err != nil && err != io.EOF {
		err = &Cut{Read: b.n, Total: b.total, Err: err}
	}
	return n, err
}

func (b *body) Close() error { return b.c.Close() }

// ProgramName is the name the kit gives a calling app that names none
// (Client.App empty): the base name of the running executable, without a
// ".exe", as people see it in ps and Activity Monitor ("notes-sync"), so
// that a call is never shown as a library's ("Go-http-client"). It is ""
// only when the executable cannot be found.
func ProgramName() string {
	programOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil || exe == "" {
			if len(os.Args) == 0 {
				return
			}
			exe = os.Args[0]
		}
		programName = strings.TrimSuffix(filepath.Base(exe), ".exe")
	})
	return programName
}

var (
	programOnce sync.Once
	programName string
)
