package localserver

import (
	"errors"
	"net"
	"net/http"
	"runtime"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/listening"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// handleListening lists the ports programs on this computer listen on
// that an app could be shared at (GET /v1/listening), each with its
// program where the OS tells and the app already registered at it:
// what "Share an App…" suggests (issue 66). Delta's own doors and
// forwards are not among them.
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
		if own[int(p.Addr.Port())] {
			continue
		}
		u := "http://" + p.Addr.String()
		out = append(out, localapi.Listening{Address: p.Addr.String(), URL: u, Program: p.Program, PID: p.PID, App: at[u]})
	}
	proto.WriteJSON(w, http.StatusOK, map[string]any{"ports": out})
}
