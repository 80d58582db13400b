package gateway

import (
	"errors"
	"net/http"
)

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
