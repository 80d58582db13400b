// Package localapi is the local API's wire types (DESIGN §3), shared by the
// gateway that serves them and the kit that reads them: the state folder's
// files an app reads (local.json, local-token, direct.json), this
// computer's identity, and the JSON the local API answers with. It
// imports the standard library only, so that an app that imports the kit
// compiles nothing of the daemon.
package localapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Files of a state folder that an app reads.
const (
	LocalJSON  = "local.json"  // where the running Delta listens (LocalFile)
	TokenFile  = "local-token" // the local API's bearer token (0600)
	DirectFile = "direct.json" // what reads need while Delta is down (Direct)
)

// DefaultStateDir is DESIGN §7's state folder for this OS: macOS
// ~/Library/Application Support/Delta; elsewhere $XDG_STATE_HOME/delta, or
// ~/.local/state/delta. DELTA_STATE_DIR, when set, names another. Empty
// when there is no home folder either.
func DefaultStateDir() string {
	if d := os.Getenv("DELTA_STATE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "Delta")
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "delta")
	}
	return filepath.Join(home, ".local", "state", "delta")
}

// Self names a computer: its name and its node ID (the tailnet's stable
// node ID, or static mode's).
type Self struct {
	Name string `json:"name"`
	Node string `json:"node_id"`
	// ID is this computer's ID in static mode with IDs (package identity),
	// which its peers pair with; empty otherwise.
	ID string `json:"id,omitempty"`
}

// LocalFile is local.json: where the running Delta's local API listens.
type LocalFile struct {
	URL string `json:"url"` // "http://127.0.0.1:7420"
	PID int    `json:"pid"`
}

// ReadLocal reads local.json. An error wrapping os.ErrNotExist means no
// Delta runs on this folder (or it did not stop cleanly and has not
// started again).
func ReadLocal(dir string) (LocalFile, error) {
	path := filepath.Join(dir, LocalJSON)
	var lf LocalFile
	b, err := os.ReadFile(path)
	if err != nil {
		return lf, err
	}
	if err := json.Unmarshal(b, &lf); err != nil || lf.URL == "" {
		return lf, fmt.Errorf("%s is not Delta's local.json (%v)", path, err)
	}
	return lf, nil
}

// ReadToken reads the local API's token.
func ReadToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("read the local token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Direct is <state>/direct.json: what the kit needs to read from a peer
// while this computer's Delta is down (a read falls back to the peer's
// gateway; a write never goes around Delta). Delta writes it while it
// runs (mode 0600, atomically) and keeps it when it stops; its tickets'
// expiry bounds it.
type Direct struct {
	// Written is when Delta last wrote the file.
	Written time.Time `json:"written"`
	// Self is this computer's name.
	Self string `json:"self"`
	// ClientCert and ClientKey name the files, in the state folder, of
	// the TLS client certificate the read tickets are bound to (tailnet
	// mode); empty when the roads are plain TCP (static mode).
	ClientCert string `json:"client_cert,omitempty"`
	ClientKey  string `json:"client_key,omitempty"`
	// Peers are the peers with a lan or thunderbolt road.
	Peers []DirectPeer `json:"peers"`
}

// DirectPeer is one peer's roads around Delta, and a read ticket for it.
type DirectPeer struct {
	Name string `json:"name"`
	// Roads are its thunderbolt roads, then its lan ones.
	Roads []DirectRoad `json:"roads"`
	// Ticket is a read ticket (reads only, naming this computer), valid
	// until Expires.
	Ticket  string    `json:"ticket,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// DirectRoad is one lan or thunderbolt road to a peer.
type DirectRoad struct {
	Road    string `json:"road"`    // "thunderbolt" or "lan"
	Address string `json:"address"` // host:port of its Delta's peer API
	// Interface is the local interface the road is bound to, "" for none.
	Interface string `json:"interface,omitempty"`
	// Pin is the SHA-256 (hex, of the DER) of the peer's TLS certificate;
	// empty for a plain TCP road (static mode).
	Pin string `json:"pin,omitempty"`
	// ConnectTimeoutMS is the road's connect timeout, as Delta's own
	// (roadfacts): a kit in any language takes it from here rather than
	// keep a copy. 0 (a direct.json of an older Delta): 3 s.
	ConnectTimeoutMS int64 `json:"connect_timeout_ms,omitempty"`
}

// ReadDirect reads <state>/direct.json.
func ReadDirect(dir string) (Direct, error) {
	var d Direct
	path := filepath.Join(dir, DirectFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s is not valid: %w", path, err)
	}
	return d, nil
}

// Call is a call as this computer's journal has it: the JSON of GET
// /v1/calls/{id} (DESIGN §4) and of each call in GET /v1/calls.
type Call struct {
	RequestID string `json:"request_id"`
	Peer      string `json:"peer"`
	App       string `json:"app"`
	CallerApp string `json:"caller_app"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// GRPC: a gRPC call, Path its /package.Service/Method.
	GRPC   bool   `json:"grpc,omitempty"`
	Digest string `json:"digest"`
	State  string `json:"state"`
	// Outcome is what the app was told.
	Outcome   string `json:"outcome,omitempty"`
	Dismissed bool   `json:"dismissed"`
	// DismissedBy says who set it aside: "the status page", "the local API".
	DismissedBy string    `json:"dismissed_by,omitempty"`
	Detail      string    `json:"detail"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	OwnerState  string    `json:"owner_state"`
	Asks        int       `json:"asks"`
	NextAskAt   time.Time `json:"next_ask_at,omitzero"`
	Attempts    []Attempt `json:"attempts"`
	Answer      *Answer   `json:"answer,omitempty"`
	// History is the call's steps, oldest first (GET /v1/calls/{id} only).
	History []Step `json:"history,omitempty"`
	// Request is what was sent, while the journal keeps it (GET
	// /v1/calls/{id} only).
	Request *SentRequest `json:"request,omitempty"`
	// SettledBy is "a person" when a person settled it, with their note.
	SettledBy  string `json:"settled_by,omitempty"`
	SettleNote string `json:"settle_note,omitempty"`
}

// Settled reports whether the call's outcome is known for good: answered,
// unavailable, carried_out or not_carried_out. needs_person is not: a
// person must check.
func (c *Call) Settled() bool {
	switch c.State {
	case "answered", "unavailable", "carried_out", "not_carried_out":
		return true
	}
	return false
}

// Waiting reports whether the call's outcome is still to come: sending,
// or unknown while Delta asks the owner.
func (c *Call) Waiting() bool { return c.State == "sending" || c.State == "unknown" }

// Attempt is one try at sending a call.
type Attempt struct {
	N         int       `json:"n"`
	Road      string    `json:"road"`
	Address   string    `json:"address"`
	StartedAt time.Time `json:"started_at"`
	// FirstByte: a byte of the request was written on this attempt.
	FirstByte bool   `json:"first_byte_written"`
	Error     string `json:"error,omitempty"`
	// Reply is the owner's own reply to this attempt, when it made one
	// instead of passing on its app's answer ("app_unavailable",
	// "app_not_found", "no_room", …: docs/protocol.md).
	Reply string `json:"reply,omitempty"`
}

// Answer is an owner app's answer as a journal keeps it, in a call's
// record and in what an owner says it knows of a call: the shape of
// kit.Answer (Header, Body), with the body base64 in JSON.
type Answer struct {
	Status int         `json:"status"`
	Header http.Header `json:"headers"`
	// Body is the kept body (JSON: base64).
	Body []byte `json:"body_base64"`
	// Omitted: the body was over 1 MiB and is not kept.
	Omitted bool `json:"body_omitted,omitempty"`
}

// Step is one step of a call's history.
type Step struct {
	At         time.Time `json:"at"`
	From       string    `json:"from,omitempty"`
	State      string    `json:"state"`
	OwnerState string    `json:"owner_state,omitempty"`
	Dismissed  bool      `json:"dismissed,omitempty"`
	Detail     string    `json:"detail,omitempty"`
}

// SentRequest is what a call sent: its headers as sent and its body, up
// to 64 KiB; Truncated when only its size is kept (the call's digest
// names it).
type SentRequest struct {
	Header http.Header `json:"headers"`
	// Body is the kept body (JSON: base64).
	Body      []byte `json:"body_base64"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated"`
	// Forgotten: a person had the headers and body dropped (delta
	// forget); only the size stays.
	Forgotten bool `json:"forgotten,omitempty"`
}

// ProofPath is where the local API proves that it holds this state
// folder's token before a client sends it the token (the kit asks on
// every new connection): GET ProofPath?nonce=N answers {"proof":
// Proof(token, N)}. Whoever holds a dead Delta's port cannot answer it,
// and the token never leaves the client.
const ProofPath = "/v1/proof"

// Proof is the proof of holding token for nonce: hex(HMAC-SHA256(token,
// "delta-local-proof/1" NUL nonce)).
func Proof(token, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("delta-local-proof/1\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// Forward is a loopback door of this computer for one peer's app (DESIGN
// §2b): every request to URL goes to App on Peer, its path and query
// unchanged, with no prefix and no token (unless Token).
type Forward struct {
	Peer string `json:"peer"`
	App  string `json:"app"`
	// Listen is the address it listens on (as bound: a port 0 asked for
	// is the port it was given, kept for every start).
	Listen string `json:"listen"`
	// URL is http://LISTEN/; BrowserURL, when the names allow one,
	// http://APP.PEER.LABEL.localhost:PORT/, the forward's own name
	// (LABEL random, kept with it), whose cookies a browser keeps apart
	// from every other listener's and every other forward's.
	URL        string `json:"url"`
	BrowserURL string `json:"browser_url,omitempty"`
	// Token reports whether the forward asks for Secret (Basic with any
	// user name and Secret as the password, or Bearer Secret): a secret
	// of the forward's own, never the local token, for the person to give
	// the app that uses the forward.
	Token  bool   `json:"token"`
	Secret string `json:"secret,omitempty"`
	// Timeout is the forward's own wait for an answer's head when its
	// client says no X-Delta-Timeout (seconds); "" for none: the owner
	// app's own timeout applies, else there is no limit (DESIGN §2c).
	Timeout string `json:"timeout,omitempty"`
	// Warning, in the answer that opened it: what a person should know
	// now (the peer has no such app).
	Warning string `json:"warning,omitempty"`
	// Open reports whether it listens now; Error says why not.
	Open      bool      `json:"open"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ForwardRequest is the body of PUT /v1/forwards/{peer}/{app}.
type ForwardRequest struct {
	// Listen is a loopback address; port 0 takes a free port. If empty,
	// 127.0.0.1:0, or the address it has already.
	Listen string `json:"listen,omitempty"`
	// Token has the forward ask for a secret of its own (Forward.Secret).
	Token bool `json:"token,omitempty"`
	// Timeout is Forward.Timeout: seconds (as X-Delta-Timeout writes
	// them), or "" or "none" for none.
	Timeout string `json:"timeout,omitempty"`
}

// ForwardsPath is the local API's list of forwards; ForwardPath one.
const ForwardsPath = "/v1/forwards"

// ForwardPath is the local API's path of the forward to app on peer.
func ForwardPath(peer, app string) string { return ForwardsPath + "/" + peer + "/" + app }
