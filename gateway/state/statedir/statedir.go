// Package statedir owns Delta's state folder (DESIGN §7): its lock,
// config.json, the secrets made on first start, peers.json, and the
// writing of the files an app reads (local.json, direct.json), whose
// names and shapes are localapi's.
package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The files and folders of a state folder, besides those an app reads
// (localapi.LocalJSON, localapi.TokenFile, localapi.DirectFile).
const (
	ConfigFile    = "config.json" // the person's settings (Config)
	LockFile      = "lock"        // held by the running Delta
	NodeIDFile    = "node-id"     // static mode's node ID, made on first start
	TicketKeyFile = "ticket-key"  // the key this computer signs tickets with
	JournalFile   = "delta.db"    // the journal (SQLite)
	TailnetDir    = "tailnet"     // tsnet's own state
	PeersFile     = "peers.json"  // the peers found on the tailnet, for the next start
	SpoolDir      = "spool"       // call bodies arriving, until they are whole and forwarded
)

// WriteLocal writes local.json atomically.
func WriteLocal(dir string, lf localapi.LocalFile) error {
	return WriteJSON(filepath.Join(dir, localapi.LocalJSON), lf)
}

// RemoveLocal removes local.json (a clean stop).
func RemoveLocal(dir string) error { return os.Remove(filepath.Join(dir, localapi.LocalJSON)) }

// WriteJSON writes v to path atomically (a temporary file renamed), mode
// 0600.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteDurable(path, path+".tmp."+strconv.Itoa(os.Getpid()), append(b, '\n'))
}

// WriteDurable writes b to path through tmp, mode 0600, so that a power
// loss or a crash leaves the old file or the new one, whole: written,
// flushed to the disk (Sync: F_FULLFSYNC on macOS), renamed into place,
// and the folder flushed so that the rename holds (issue 64, M14: config
// and key files were renamed into place without a flush, and a power
// loss right after delta init or pairing could leave an empty one).
func WriteDurable(path, tmp string, b []byte) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		// A folder that cannot be flushed (some file systems refuse) still
		// holds the renamed file; only the flush's promise is lost.
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Config is <state>/config.json. Every field is optional.
type Config struct {
	// Mode is how this computer finds its peers: "static" (peers and a
	// network key in this file; nothing contacts Tailscale) or "tailnet"
	// (joined in-process; Delta contacts the control server and the DERP
	// relays it names). delta init writes it. Left out, as in configs
	// written before it existed: static when "peers" is given, else
	// tailnet, except that a network_key with no peers is refused (a
	// static config that lost its peers never becomes tailnet mode).
	Mode string `json:"mode,omitempty"`
	// Allow lists who else may use this computer's peer API over the
	// tailnet, besides the nodes of the same tailnet user: login names
	// ("alice@example.com"), tags ("tag:media") or stable node IDs.
	Allow []string `json:"allow,omitempty"`
	// Name is this computer's name. If empty, the host name.
	Name string `json:"name,omitempty"`
	// NodeID is this computer's node ID in static mode. If empty, one is
	// made on first start and kept in <state>/node-id.
	NodeID string `json:"node_id,omitempty"`
	// PeerListen is the peer API's address in static mode.
	PeerListen string `json:"peer_listen,omitempty"`
	// NetworkKey is the hex HMAC key that signs tickets, shared by every
	// computer of a static network whose peers have no IDs (plain TCP).
	// Static mode with IDs needs none: each computer signs with its own key.
	NetworkKey string `json:"network_key,omitempty"`
	// Peers are the other computers, with an address per road. If any are
	// named, Delta runs in static mode: no tailnet.
	Peers []roads.StaticPeer `json:"peers"`
	// Discovery is static mode's local discovery (with IDs): "" or "on"
	// announces this computer and listens for its peers on UDP port 7422;
	// "off" does neither; a HOST:PORT listens there (tests). The
	// environment's DELTA_DISCOVERY, when set, wins.
	Discovery string `json:"discovery,omitempty"`
	// WakeOnLAN lets this computer's peers wake it with a Wake-on-LAN
	// packet when every road to it is silent (tailnet mode): its hello
	// publishes its lan and thunderbolt MAC addresses. macOS wakes for it
	// when "Wake for network access" is on.
	WakeOnLAN bool `json:"wake_on_lan,omitempty"`
	// MaxCallBytes is the largest body a call may carry, out and in
	// (DESIGN §2a). If 0, 16 GiB. A call's body over 1 MiB streams: it
	// is never held whole in memory, and the owner writes it to the
	// state folder's spool until it has arrived whole.
	MaxCallBytes int64 `json:"max_call_bytes,omitempty"`
	// PeersGiven reports whether the file has "peers" at all: an empty
	// list is a mistake, not a wish to join the tailnet.
	PeersGiven bool `json:"-"`
}

// ReadConfig reads <state>/config.json; a missing file is an empty
// config.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var fc Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return nil, fmt.Errorf("%s is not valid: %s", path, JSONError(b, err))
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) == nil {
		_, fc.PeersGiven = keys["peers"]
	}
	if err := fc.checkMode(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fc.Name != "" {
		if err := proto.CheckName("computer", fc.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, p := range fc.Peers {
		if err := proto.CheckName("peer", p.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &fc, nil
}

// JSONError says what is wrong with the JSON document b, as err from
// decoding it says, with the line and column where the decoder stopped
// when it knows (a syntax error, a value of the wrong type), and in
// words a person can act on ("unknown field", not the decoder's Go type
// names).
func JSONError(b []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &syn):
		off = max(syn.Offset-1, 0) // Offset is past the character at fault
	case errors.As(err, &typ):
		off = typ.Offset
		msg = fmt.Sprintf("%q must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		off, msg = int64(len(b)), "the file ends before the JSON does"
	}
	if off < 0 {
		return msg
	}
	line, col := 1, 1
	for _, c := range b[:min(int(off), len(b))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, msg)
}

// jsonKind names a Go kind as JSON calls it.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "struct", "map":
		return "an object"
	}
	return "a number"
}

// The modes of Config.Mode.
const (
	ModeStatic  = "static"
	ModeTailnet = "tailnet"
)

// Static reports whether the config runs static mode: "mode": "static",
// or peers given in a config that names no mode.
func (fc *Config) Static() bool {
	return fc.Mode == ModeStatic || fc.Mode == "" && len(fc.Peers) > 0
}

// checkMode refuses a config whose mode and contents disagree, naming
// what to change.
func (fc *Config) checkMode() error {
	switch {
	case fc.Mode != "" && fc.Mode != ModeStatic && fc.Mode != ModeTailnet:
		return fmt.Errorf(`"mode": %q is not a mode: "static" (peers in this file) or "tailnet" (joined through Tailscale)`, fc.Mode)
	case fc.Mode == "" && fc.PeersGiven && len(fc.Peers) == 0:
		return fmt.Errorf(`"peers": [] with no "mode" — for static mode waiting to be paired write "mode": "static"; to join the tailnet instead, remove "peers" and "network_key" and write "mode": "tailnet"`)
	case fc.Mode == ModeStatic && len(fc.Peers) == 0 && fc.NetworkKey != "":
		return fmt.Errorf(`"mode": "static" with a "network_key" needs "peers" (delta init --static writes them)`)
	case fc.Mode == ModeTailnet && (fc.PeersGiven || fc.NetworkKey != "" || fc.PeerListen != "" || fc.NodeID != ""):
		return fmt.Errorf(`"mode": "tailnet" with static mode's settings ("peers", "network_key", "peer_listen", "node_id"): remove them, or write "mode": "static"`)
	case fc.Mode == "" && !fc.PeersGiven && fc.NetworkKey != "":
		return fmt.Errorf(`has a "network_key" but no "peers": a static config that lost its peers. Delta does not join a tailnet in its place (that would contact Tailscale's servers): put "peers" back (delta init --static writes them), or to use a tailnet, remove "network_key" and write "mode": "tailnet"`)
	}
	return nil
}

// Self names this computer in static mode: the config's name (else
// computerName's: netwatch.ComputerName) and node ID (else one made on
// first start, kept in node-id).
func (fc *Config) Self(dir string, computerName func() (string, error)) (localapi.Self, error) {
	s := localapi.Self{Name: fc.Name, Node: fc.NodeID}
	if s.Name == "" {
		h, err := computerName()
		if err != nil {
			return s, fmt.Errorf("statedir: no name in %s, and %w", ConfigFile, err)
		}
		s.Name = h
	}
	if s.Node == "" {
		id, err := LoadOrCreateSecret(filepath.Join(dir, NodeIDFile))
		if err != nil {
			return s, fmt.Errorf("statedir: node id: %w", err)
		}
		s.Node = "n" + id[:16]
	}
	return s, nil
}

// Lock takes the state folder's exclusive lock (<dir>/lock), making the
// folder (mode 0700) if need be, or says which Delta holds it. Take it
// before anything else uses the folder; the lock is released when the file
// is closed.
func Lock(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("statedir: make state folder: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("statedir: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		he := &HeldError{Dir: dir, Err: err}
		if lf, err := localapi.ReadLocal(dir); err == nil {
			he.Local = &lf
		}
		return nil, he
	}
	return f, nil
}

// HeldError is Lock's refusal: another Delta holds the state folder (the
// same user's, since the folder is theirs). Local is what that one wrote
// in local.json, if it did.
type HeldError struct {
	Dir   string
	Local *localapi.LocalFile
	Err   error
}

func (e *HeldError) Error() string {
	holder := ""
	if e.Local != nil {
		holder = fmt.Sprintf(" (pid %d, %s)", e.Local.PID, e.Local.URL)
	}
	return fmt.Sprintf("gateway: another Delta is running with state folder %s%s: %v", e.Dir, holder, e.Err)
}

func (e *HeldError) Unwrap() error { return e.Err }

// LoadOrCreateSecret reads a secret file, or writes a new random one
// (mode 0600) when there is none.
func LoadOrCreateSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if s := strings.TrimSpace(string(b)); len(s) >= 16 {
			return s, nil
		}
		return "", fmt.Errorf("%s holds fewer than 16 characters; remove it to make a new one", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	buf := make([]byte, 32)
	rand.Read(buf)
	s := hex.EncodeToString(buf)
	return s, WriteDurable(path, path+".tmp", []byte(s+"\n"))
}

// Peer is one entry of peers.json: a peer found on the tailnet, with its
// last roads, so that a restarted Delta knows it at once.
type Peer struct {
	Name   string     `json:"name"`
	Node   string     `json:"node_id"`
	Roads  []PeerRoad `json:"roads"`
	SeenAt time.Time  `json:"seen_at"`
}

// PeerRoad is one lan or thunderbolt address a peer published in hello.
type PeerRoad struct {
	Road      roads.Road `json:"road"`
	Address   string     `json:"address"` // host:port
	Interface string     `json:"interface,omitempty"`
	MAC       string     `json:"mac,omitempty"` // when the peer allows waking
}

type peersJSON struct {
	Peers []Peer `json:"peers"`
}

// ReadPeers reads peers.json, by name; a missing file is no peers.
func ReadPeers(dir string) (map[string]Peer, error) {
	path := filepath.Join(dir, PeersFile)
	m := map[string]Peer{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("statedir: read %s: %w", path, err)
	}
	var pj peersJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		return nil, fmt.Errorf("statedir: %s is not valid: %w", path, err)
	}
	for _, p := range pj.Peers {
		if p.Name != "" {
			m[p.Name] = p
		}
	}
	return m, nil
}

// WritePeers writes peers.json atomically, sorted by name.
func WritePeers(dir string, m map[string]Peer) error {
	pj := peersJSON{Peers: []Peer{}}
	for _, p := range m {
		pj.Peers = append(pj.Peers, p)
	}
	slices.SortFunc(pj.Peers, func(a, b Peer) int { return strings.Compare(a.Name, b.Name) })
	path := filepath.Join(dir, PeersFile)
	if err := WriteJSON(path, pj); err != nil {
		return fmt.Errorf("statedir: write %s: %w", path, err)
	}
	return nil
}

// WriteDirect writes <state>/direct.json atomically, mode 0600.
func WriteDirect(dir string, d localapi.Direct) error {
	return WriteJSON(filepath.Join(dir, localapi.DirectFile), d)
}
