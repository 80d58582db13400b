package localserver

import (
	"errors"
	"net/http"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// pairer is the mode's pairing, or why there is none: tailnet mode pairs
// by the tailnet's login, not here.
func (g *Handler) pairer(w http.ResponseWriter) roads.Pairer {
	if p, ok := g.cfg.Router.(roads.Pairer); ok {
		return p
	}
	localError(w, localapi.Conflict, "this Delta is in tailnet mode: its peers are the tailnet's computers, paired by logging in to the same tailnet, not here")
	return nil
}

// pairError answers a pairing that failed: its outcome when it says one,
// else unavailable (config.json could not be written).
func pairError(w http.ResponseWriter, err error) {
	var pe *roads.PairError
	if errors.As(err, &pe) {
		localError(w, pe.Outcome, pe.Msg)
		return
	}
	localError(w, localapi.Unavailable, err.Error())
}

// handlePairing is GET /v1/pairing: this computer's ID, the computers
// asking to pair with it, the peers it paired and whether each has paired
// it back.
func (g *Handler) handlePairing(w http.ResponseWriter, r *http.Request) {
	if p := g.pairer(w); p != nil {
		proto.WriteJSON(w, http.StatusOK, p.Pairing())
	}
}

// handlePair is PUT /v1/pairs/{name}: a person's yes here to the computer
// the body names; the peer is asked at once, and the answer says what it
// said (localapi.PairedPeer).
func (g *Handler) handlePair(w http.ResponseWriter, r *http.Request) {
	p := g.pairer(w)
	if p == nil {
		return
	}
	var body localapi.PairWith
	if err := proto.DecodeObject(r.Body, 4<<10, &body); err != nil {
		localError(w, localapi.BadRequest, `the body is not {"id": ID, "address": "HOST:PORT"} (and, if it likes, "road": "lan" or "thunderbolt"): `+err.Error())
		return
	}
	pp, err := p.Pair(r.Context(), r.PathValue("name"), body)
	if err != nil {
		pairError(w, err)
		return
	}
	proto.WriteJSON(w, http.StatusOK, pp)
}

// handleUnpair is DELETE /v1/pairs/{name}.
func (g *Handler) handleUnpair(w http.ResponseWriter, r *http.Request) {
	p := g.pairer(w)
	if p == nil {
		return
	}
	if err := p.Unpair(r.PathValue("name")); err != nil {
		pairError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handlePairRequest is POST /v1/pair-requests/{id}/{action}: accept
// (with, if it likes, {"name": NAME}) or ignore a computer's request to
// pair.
func (g *Handler) handlePairRequest(w http.ResponseWriter, r *http.Request) {
	p := g.pairer(w)
	if p == nil {
		return
	}
	var body localapi.AcceptPair
	if r.ContentLength != 0 {
		if err := proto.DecodeObject(r.Body, 4<<10, &body); err != nil {
			localError(w, localapi.BadRequest, `the body is not {"name": NAME}: `+err.Error())
			return
		}
	}
	pp, err := p.AnswerPairRequest(r.Context(), r.PathValue("id"), r.PathValue("action"), body)
	if err != nil {
		pairError(w, err)
		return
	}
	proto.WriteJSON(w, http.StatusOK, pp)
}

// handleRename is PUT /v1/name: this computer's new name (static mode;
// the tailnet names a computer by its own hostname there).
func (g *Handler) handleRename(w http.ResponseWriter, r *http.Request) {
	p := g.pairer(w)
	if p == nil {
		return
	}
	var body localapi.Rename
	if err := proto.DecodeObject(r.Body, 4<<10, &body); err != nil {
		localError(w, localapi.BadRequest, `the body is not {"name": NAME}: `+err.Error())
		return
	}
	self, err := p.Rename(body.Name)
	if err != nil {
		pairError(w, err)
		return
	}
	proto.WriteJSON(w, http.StatusOK, self)
}
