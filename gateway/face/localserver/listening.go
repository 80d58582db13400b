package localserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/listening"
	"github.com/delta-roads/delta/gateway/roads"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// handleListening lists the ports programs on this computer listen on
// that an app could be shared at (GET /v1/listening), each with its
// program where the OS tells and the app already registered at it:
// what "Share an App…" suggests (issue 66). Delta's own doors and
// forwards, and any program named delta (another user's Delta), are not
// among them.
func (g *Handler) handleListening(w http.ResponseWriter, r *http.Request) {
	ports, err := listening.Ports()
	if errors.Is(err, listening.ErrUnsupported) {
		localError(w, localapi.Unavailable, "this computer's listening ports are not read on "+runtime.GOOS+" yet; give the app's URL (http://127.0.0.1:PORT)")
		return
	}
	if err != nil {
		localError(w, localapi.Unavailable, "could not read this computer's listening ports: "+err.Error())
		return
	}
	own := map[int]bool{}
	for _, a := range append(g.cfg.OwnDoors(), g.forwards.Addrs()...) {
		if ta, ok := a.(*net.TCPAddr); ok {
			own[ta.Port] = true
		}
	}
	apps, err := g.cfg.DB.Apps().List(r.Context())
	if err != nil {
		localError(w, localapi.Unavailable, "could not read the journal: "+err.Error())
		return
	}
	at := map[string]string{}
	for _, a := range apps {
		at[a.URL] = a.Name
	}
	out := []localapi.Listening{}
	for _, p := range ports {
		if own[int(p.Addr.Port())] || strings.EqualFold(p.Program, "delta") {
			continue // a Delta's own doors (another user's too) are no app to share
		}
		u := "http://" + p.Addr.String()
		out = append(out, localapi.Listening{Address: p.Addr.String(), URL: u, Program: p.Program, PID: p.PID, App: at[u]})
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"ports": out})
}

// peerAppsWait bounds the question to a peer about its apps: a person
// waits for the answer on the page or in the menu.
const peerAppsWait = 5 * time.Second

// handlePeerApps lists the apps a paired peer shares with this computer
// (GET /v1/peer-apps/{peer}): the peer's own answer, asked now over the
// pinned road (its door answers paired peers only), each with the
// forward here to it when there is one.
func (g *Handler) handlePeerApps(w http.ResponseWriter, r *http.Request) {
	peer := r.PathValue("peer")
	if err := proto.CheckName("peer", peer); err != nil {
		localError(w, localapi.BadRequest, err.Error())
		return
	}
	if !g.cfg.Router.Known(peer) {
		localError(w, localapi.NotFound, fmt.Sprintf("%s: %v (delta status lists the paired peers)", peer, roads.ErrUnknownPeer))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), peerAppsWait)
	defer cancel()
	names, err := g.cfg.PeerApps(ctx, peer)
	if err != nil {
		localError(w, localapi.Unavailable, fmt.Sprintf("could not ask %s which apps it shares (%v)", peer, err))
		return
	}
	fwd := map[string]*localapi.Forward{}
	if g.forwards != nil {
		for _, f := range g.forwards.List() {
			if f.Peer == peer {
				fwd[f.App] = &f
			}
		}
	}
	out := localapi.PeerApps{Peer: peer, Apps: []localapi.PeerApp{}}
	for _, n := range names {
		out.Apps = append(out.Apps, localapi.PeerApp{App: n, Forward: fwd[n]})
	}
	proto.WriteJSON(w, http.StatusOK, out)
}
