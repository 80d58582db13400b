// Package notes is a small owner app built on the kit: it keeps notes in
// memory and serves them to the person's other computers through Delta.
//
//	GET  /notes       every note, oldest first
//	GET  /notes/{id}  one note
//	POST /notes       {"text": "…"} adds a note; 201 with the note
//
// Each note remembers the request id and the computer of the call that
// made it, so a person can match a note to the call their menu shows.
// The demo (`delta demo`) drives it through the hooks Slow and ResetNext,
// which stand for an app that is too slow and one that crashes mid-answer.
// The command notes (cmd/notes) runs it against this computer's Delta.
package notes

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/delta-roads/delta/kit"
)

// Note is one note.
type Note struct {
	ID        int       `json:"id"`
	Text      string    `json:"text"`
	From      string    `json:"from,omitempty"`       // the calling computer
	RequestID string    `json:"request_id,omitempty"` // the call that made it
	CreatedAt time.Time `json:"created_at"`
}

// App is the notes app. Serve it behind kit.Owner (Handler does).
type App struct {
	mu    sync.Mutex
	notes []Note
	// slow: the next write is applied, then answered after this long.
	slow time.Duration
	// reset: the next write is read, then its connection reset with no
	// answer and nothing applied or not: the app cannot tell.
	reset bool
}

// Handler is the app behind kit.Owner(secret): only Delta gets in.
func (a *App) Handler(secret string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /notes", a.list)
	mux.HandleFunc("GET /notes/{id}", a.get)
	mux.HandleFunc("POST /notes", a.add)
	return kit.Owner(secret, mux)
}

// Slow makes the next write wait d after it is applied before it answers:
// the caller's timeout passes, and only reconciliation learns it was done.
func (a *App) Slow(d time.Duration) { a.mu.Lock(); a.slow = d; a.mu.Unlock() }

// ResetNext makes the next write read its request, store the note, and
// reset the connection without an answer: as an app that crashed while
// answering, it leaves its Delta unable to say whether it acted.
func (a *App) ResetNext() { a.mu.Lock(); a.reset = true; a.mu.Unlock() }

// Notes returns a copy of the notes.
func (a *App) Notes() []Note {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Note{}, a.notes...)
}

func (a *App) list(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"notes": a.Notes()})
}

func (a *App) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	for _, n := range a.Notes() {
		if err == nil && n.ID == id {
			writeJSON(w, http.StatusOK, n)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no note %q", r.PathValue("id"))})
}

func (a *App) add(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || body.Text == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `the body is not {"text": "…"} with some text`})
		return
	}
	in, _ := kit.FromRequest(r)
	a.mu.Lock()
	n := Note{ID: len(a.notes) + 1, Text: body.Text, From: in.Caller, RequestID: in.RequestID, CreatedAt: time.Now().UTC()}
	a.notes = append(a.notes, n)
	slow, reset := a.slow, a.reset
	a.slow, a.reset = 0, false
	a.mu.Unlock()
	if reset {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, not a clean close; best effort
				}
				conn.Close()
				return
			}
		}
	}
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
		}
	}
	writeJSON(w, http.StatusCreated, n)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is written; a client gone has nothing to read
}
