package kit

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Incoming is what Delta says of a request it forwarded to an owner app.
type Incoming struct {
	// RequestID names a call (empty for reads). A call arrives at most
	// once under an id, and the owner's Delta remembers the answer: an app
	// that keeps the id with its effect can tell a person which call did
	// what.
	RequestID string
	// Caller is the calling computer's name; CallerApp the calling app's,
	// if it gave one.
	Caller    string
	CallerApp string
	// Deadline is when the caller stops waiting (from X-Delta-Timeout);
	// zero if none was given.
	Deadline time.Time
}

type incomingKey struct{}

// FromRequest returns what Delta said of r; ok is false for a request
// that did not pass Owner.
func FromRequest(r *http.Request) (Incoming, bool) {
	in, ok := r.Context().Value(incomingKey{}).(Incoming)
	return in, ok
}

// Owner admits only requests forwarded by this computer's Delta: those
// carrying X-Delta-Forward-Secret equal to secret (from RegisterApp),
// compared in constant time. Anything else gets 403 and never reaches
// next. Admitted requests carry an Incoming (FromRequest). Their context
// does not end at the caller's deadline: once an app has begun to act it
// should finish and answer, because its Delta records the answer for the
// caller's reconciliation.
//
// An owner app must make this check: its port is on loopback, where any
// local process can reach it, and only Delta knows the secret.
func Owner(secret string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(HeaderSecret)
		if secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			why := "the request has no X-Delta-Forward-Secret: only Delta may call this app"
			if got != "" {
				why = "X-Delta-Forward-Secret does not match: only this computer's Delta may call this app"
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "forbidden", "detail": why}) // a client gone has nothing to read
			return
		}
		in := Incoming{RequestID: r.Header.Get(HeaderRequestID), Caller: r.Header.Get(HeaderCaller), CallerApp: r.Header.Get(HeaderApp)}
		if s, err := strconv.ParseFloat(r.Header.Get(HeaderTimeout), 64); err == nil && s > 0 {
			in.Deadline = time.Now().Add(time.Duration(s * float64(time.Second)))
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), incomingKey{}, in)))
	})
}
