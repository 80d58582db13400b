package gateway

import (
	"net/http"

	"github.com/delta-roads/delta/gateway/owner"
)

// The peer API's door seam lives with the owner side; these names keep the
// gateway's API whole for the modes that plug into it.
type (
	// Door identifies the caller of a peer API request.
	Door = owner.Door
	// Caller is who sent a peer API request.
	Caller = owner.Caller
)

// ErrDoorUnauthorized marks a door refusal that a new ticket may cure.
var ErrDoorUnauthorized = owner.ErrDoorUnauthorized

// CallerFrom returns the caller the door admitted, for handlers added with
// PeerListener.Routes.
func CallerFrom(r *http.Request) Caller { return owner.CallerFrom(r) }

// OwnerExtraWait is how long the owner keeps waiting for a slow app after
// the caller's deadline has passed (DESIGN §8).
const OwnerExtraWait = owner.ExtraWait
