package kit

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// NotDelta: the listener named in local.json is not this folder's Delta
// (a process that took a dead Delta's port): nothing was sent to it, the
// token least of all.
type NotDelta struct {
	Addr string
	Why  string
}

func (e *NotDelta) Error() string {
	return fmt.Sprintf("the listener at %s is not this folder's Delta (%s); the token and the request were not sent to it", e.Addr, e.Why)
}

// dialProven connects to the local API and has it prove, before anything
// of the app's is sent, that it holds this folder's token: an HMAC of a
// fresh nonce keyed by the token, so the token itself never leaves. A
// listener that cannot is refused (*NotDelta).
func (c *Client) dialProven(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	tok := c.token
	c.mu.Unlock()
	if err := prove(ctx, conn, addr, tok); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func prove(ctx context.Context, conn net.Conn, addr, tok string) error {
	var n [16]byte
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails
	nonce := hex.EncodeToString(n[:])
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(conn, "GET %s?nonce=%s HTTP/1.1\r\nHost: %s\r\n\r\n", localapi.ProofPath, nonce, addr); err != nil {
		return &NotDelta{Addr: addr, Why: "it took the connection and not the question: " + err.Error()}
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return &NotDelta{Addr: addr, Why: "it did not answer as Delta does: " + err.Error()}
	}
	defer resp.Body.Close()
	var p struct {
		Proof string `json:"proof"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case err != nil:
		return &NotDelta{Addr: addr, Why: "its answer broke off: " + err.Error()}
	case resp.Header.Get(HeaderOutcome) == "":
		return &NotDelta{Addr: addr, Why: fmt.Sprintf("it answered %s without %s", resp.Status, HeaderOutcome)}
	case resp.StatusCode != http.StatusOK || json.Unmarshal(b, &p) != nil:
		return &NotDelta{Addr: addr, Why: fmt.Sprintf("it answered the proof %s", resp.Status)}
	case br.Buffered() != 0:
		return &NotDelta{Addr: addr, Why: "it sent more than the proof"}
	}
	if !hmac.Equal([]byte(p.Proof), []byte(localapi.Proof(tok, nonce))) {
		return &NotDelta{Addr: addr, Why: "it does not hold this folder's token (another folder's Delta, or another program)"}
	}
	return nil
}

// leftBehind reports whether local.json names a Delta that is not
// running (its process is gone: a crash or SIGKILL left the file), and if
// so removes it, unless a new Delta has written another meanwhile.
func leftBehind(dir string, lf localapi.LocalFile) bool {
	if lf.PID <= 0 || pidAlive(lf.PID) {
		return false
	}
	if again, err := localapi.ReadLocal(dir); err == nil && again.PID == lf.PID {
		// Proven stale: its process is gone. Best effort: a file that
		// cannot be removed is still not believed.
		_ = os.Remove(filepath.Join(dir, localapi.LocalJSON))
	}
	return true
}

var errLeftBehind = errors.New("its local.json was left by a Delta that is no longer running (a crash or a SIGKILL); it was removed")
