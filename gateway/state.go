package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/delta-roads/delta/gateway/proto"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/ticket"
	"github.com/delta-roads/delta/gateway/view"
)

// configFile is the state folder's config, read at start.
const configFile = "config.json"

// FileConfig is <state>/config.json. Every field is optional.
type FileConfig struct {
	// Allow lists who else may use this computer's peer API over the
	// tailnet, besides the nodes of the same tailnet user: login names
	// ("alice@example.com"), tags ("tag:media") or stable node IDs.
	Allow []string `json:"allow"`
	// Name is this computer's name. If empty, the host name.
	Name string `json:"name"`
	// NodeID is this computer's node ID in static mode. If empty, one is
	// made on first start and kept in <state>/node-id.
	NodeID string `json:"node_id"`
	// PeerListen is the peer API's address in static mode.
	PeerListen string `json:"peer_listen"`
	// NetworkKey is the hex HMAC key that signs tickets, shared by every
	// computer of a static network. If empty, <state>/ticket-key (made on
	// first start), which only this computer knows.
	NetworkKey string `json:"network_key"`
	// Peers are the other computers, with an address per road. If any are
	// named, Delta runs in static mode: no tailnet.
	Peers []roads.StaticPeer `json:"peers"`
}

// ReadFileConfig reads <state>/config.json; a missing file is an empty
// config.
func ReadFileConfig(dir string) (*FileConfig, error) {
	path := filepath.Join(dir, configFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &FileConfig{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: read %s: %w", path, err)
	}
	var fc FileConfig
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return nil, fmt.Errorf("gateway: %s is not valid: %w", path, err)
	}
	if fc.Name != "" {
		if err := proto.CheckName("computer", fc.Name); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", path, err)
		}
	}
	for _, p := range fc.Peers {
		if err := proto.CheckName("peer", p.Name); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", path, err)
		}
	}
	return &fc, nil
}

func (fc *FileConfig) self(dir string) (view.Self, error) {
	s := view.Self{Name: fc.Name, Node: fc.NodeID}
	if s.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return s, fmt.Errorf("gateway: no name in %s and the host name is unknown: %w", configFile, err)
		}
		s.Name, _, _ = strings.Cut(h, ".")
	}
	if s.Node == "" {
		id, err := loadOrCreateSecret(filepath.Join(dir, "node-id"))
		if err != nil {
			return s, fmt.Errorf("gateway: node id: %w", err)
		}
		s.Node = "n" + id[:16]
	}
	return s, nil
}

func (fc *FileConfig) key(dir string) (ticket.Key, error) {
	if fc.NetworkKey != "" {
		k, err := hex.DecodeString(fc.NetworkKey)
		if err != nil || len(k) < 16 {
			return nil, fmt.Errorf("gateway: %s: network_key must be at least 16 bytes, hex-encoded", configFile)
		}
		return k, nil
	}
	k, err := ticket.LoadOrCreate(filepath.Join(dir, "ticket-key"))
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return k, nil
}

// LockStateDir takes the state folder's exclusive lock (<dir>/lock), or
// says which Delta holds it. Take it before anything else uses the folder
// and hand it to Config.StateLock; the lock is released when the file is
// closed.
func LockStateDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: make state folder: %w", err)
	}
	return lockState(dir)
}

// lockState takes the state folder's exclusive lock, or says which Delta
// holds it.
func lockState(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		holder := ""
		if b, err := os.ReadFile(filepath.Join(dir, "local.json")); err == nil {
			var lj struct {
				URL string `json:"url"`
				PID int    `json:"pid"`
			}
			if json.Unmarshal(b, &lj) == nil {
				holder = fmt.Sprintf(" (pid %d, %s)", lj.PID, lj.URL)
			}
		}
		return nil, fmt.Errorf("gateway: another Delta is running with state folder %s%s: %w", dir, holder, err)
	}
	return f, nil
}

// loadOrCreateSecret reads a secret file, or writes a new random one
// (mode 0600) when there is none.
func loadOrCreateSecret(path string) (string, error) {
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
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s+"\n"), 0o600); err != nil {
		return "", err
	}
	return s, os.Rename(tmp, path)
}

// Door identifies the caller of a peer API request.
type Door interface {
	// Identify returns who is calling, or an error: one wrapping
	// ErrDoorUnauthorized means "renew the ticket" (401), any other is 403.
	Identify(r *http.Request) (Caller, error)
}

// ErrDoorUnauthorized marks a door refusal that a new ticket may cure.
var ErrDoorUnauthorized = errors.New("no valid ticket")

// Caller is who sent a peer API request.
type Caller struct {
	Node string // stable node ID
	Name string // computer name
}

// TicketDoor admits requests that carry `Authorization: Delta <ticket>`
// signed with Key.
type TicketDoor struct {
	Key ticket.Key
	Now func() time.Time
}

// Identify implements Door.
func (d TicketDoor) Identify(r *http.Request) (Caller, error) {
	auth := r.Header.Get("Authorization")
	t, ok := strings.CutPrefix(auth, "Delta ")
	if !ok {
		if auth == "" {
			return Caller{}, fmt.Errorf("%w: the request has no Authorization header", ErrDoorUnauthorized)
		}
		return Caller{}, fmt.Errorf("%w: the Authorization header is not \"Delta <ticket>\"", ErrDoorUnauthorized)
	}
	c, err := d.Key.Check(t, d.Now())
	if err != nil {
		return Caller{}, fmt.Errorf("%w: %w", ErrDoorUnauthorized, err)
	}
	return Caller{Node: c.Node, Name: c.Name}, nil
}

// MintedTickets mints this computer's own tickets with a key shared by the
// static network, renewing them ahead of expiry.
type MintedTickets struct {
	Key  ticket.Key
	Self view.Self
	Now  func() time.Time
}

// Ticket implements Tickets.
func (m *MintedTickets) Ticket(_ context.Context, _ string, _ bool) (string, error) {
	return m.Key.Mint(ticket.Claims{Node: m.Self.Node, Name: m.Self.Name, Expires: m.Now().Add(ticket.Lifetime)}), nil
}
