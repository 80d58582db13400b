package proto

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// routeMuxes are ServeMuxes with the two route patterns of the local API
// and of the owner's door, beside patterns of other shapes, as the real
// ones have them.
func routeMuxes() map[string]*http.ServeMux {
	nop := func(http.ResponseWriter, *http.Request) {}
	local := http.NewServeMux()
	local.HandleFunc("/v1/peers/{peer}/{app}", nop)
	local.HandleFunc("/v1/peers/{peer}/{app}/{path...}", nop)
	local.HandleFunc("GET /v1/calls/{id}", nop)
	local.HandleFunc("POST /v1/calls/{id}/ask", nop)
	local.HandleFunc("GET /v1/status", nop)
	local.HandleFunc("/", nop)
	door := http.NewServeMux()
	door.HandleFunc("GET "+PathHello, nop)
	door.HandleFunc(PathApps+"{app}", nop)
	door.HandleFunc(PathApps+"{app}/{path...}", nop)
	door.HandleFunc("GET "+PathCalls+"{id}", nop)
	door.HandleFunc("/", nop)
	return map[string]*http.ServeMux{"/v1/peers/": local, PathApps: door}
}

var routeNames = map[string]int{"/v1/peers/": 2, PathApps: 1}

// checkRoute holds NamedTarget to ServeMux's own choice for one path and
// method, on both muxes.
func checkRoute(t *testing.T, muxes map[string]*http.ServeMux, method, p string) {
	u, err := url.ParseRequestURI(p)
	if err != nil || method == http.MethodConnect {
		return
	}
	for prefix, mux := range muxes {
		r := &http.Request{Method: method, URL: u, Host: "127.0.0.1:1", RequestURI: p, Header: http.Header{}}
		h, pattern := mux.Handler(r)
		// An unclean path is answered with a redirect to its clean
		// form, under the pattern the clean form matches.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		names := routeNames[prefix]
		want := rec.Code == http.StatusOK && (pattern == prefix+map[int]string{1: "{app}", 2: "{peer}/{app}"}[names] ||
			pattern == prefix+map[int]string{1: "{app}/{path...}", 2: "{peer}/{app}/{path...}"}[names])
		if got := NamedTarget(u.EscapedPath(), prefix, names); got != want {
			t.Errorf("%s %q under %q: NamedTarget says %v, ServeMux chose %q", method, p, prefix, got, pattern)
		}
	}
}

var routeSeeds = []string{
	"/v1/peers/studio/notes", "/v1/peers/studio/notes/", "/v1/peers/studio/notes/a/b?x=1",
	"/v1/peers/studio", "/v1/peers/studio/", "/v1/peers/", "/v1/peers", "/v1/peers//notes",
	"/v1/peers/studio//x", "/v1/peers/studio/notes//x", "/v1/peers/studio/notes/./x",
	"/v1/peers/studio/notes/../x", "/v1/peers/studio/notes/x/..", "/v1/peers/studio/notes/.",
	"/v1/peers/st%2Fudio/notes/a", "/v1/peers/studio/n%6Ftes/a%2Fb", "/v1/peers/%2E%2E/notes",
	"/v1/peers/./notes", "/v1/peers/../x/y", "/v1/peers/studio/notes/%zz", "/v1/peersx/a/b",
	"/v1/peers/%2F/00", "/v1/peers/studio/notes/a%2F%2Fb", "/v1/peers/studio/%2E/x", "/delta/v1/apps/%2F/x",
	"/v1/calls/1", "/v1/status", "/", "*",
	"/delta/v1/apps/notes", "/delta/v1/apps/notes/", "/delta/v1/apps/notes/a/b", "/delta/v1/apps/",
	"/delta/v1/apps", "/delta/v1/apps//x", "/delta/v1/apps/notes//x", "/delta/v1/apps/notes/../x",
	"/delta/v1/apps/n%6Ftes", "/delta/v1/apps/./x", "/delta/v1/hello", "/delta/v1/calls/1",
}

func TestNamedTargetIsTheMuxs(t *testing.T) {
	muxes := routeMuxes()
	for _, p := range routeSeeds {
		for _, m := range []string{"GET", "HEAD", "POST", "PROPFIND", "OPTIONS"} {
			checkRoute(t, muxes, m, p)
		}
	}
	// The busy case allocates nothing.
	if n := testing.AllocsPerRun(100, func() { NamedTarget("/v1/peers/studio/notes/a/b/", "/v1/peers/", 2) }); n != 0 {
		t.Errorf("NamedTarget allocates %v objects, want 0", n)
	}
}

func FuzzNamedTarget(f *testing.F) {
	for _, p := range routeSeeds {
		f.Add(p)
	}
	muxes := routeMuxes()
	f.Fuzz(func(t *testing.T, p string) {
		checkRoute(t, muxes, "GET", p)
	})
}
