package localserver

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// FuzzLocalRequest feeds arbitrary requests to the local API's parsing and
// target resolution (what handlePeerRequest does before anything is sent):
// whatever is accepted names a valid peer and app, a path from "/" holding
// no NUL and no unclean segment, a timeout Delta allows; and the escaped
// path is the peer's and the app's segments and the rest, exactly.
func FuzzLocalRequest(f *testing.F) {
	for _, s := range []string{
		"GET /v1/peers/studio/notes/items/42?full=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"POST /v1/peers/stu%64io/n%6Ftes/a%2Fb HTTP/1.1\r\nHost: localhost\r\nX-Delta-Timeout: 2.5\r\nContent-Length: 1\r\n\r\nx",
		"GET /v1/peers/b%2Fta/notes HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"CONNECT 127.0.0.1:7420 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"PROPFIND /v1/peers/studio/dav/%2e%2e/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Delta-Route: lan\r\nX-Delta-Route: tailnet\r\n\r\n",
		"GET /v1/peers/studio/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		if proto.UncleanPath(r.URL.Path) != "" || func() bool { _, why := proto.Refused(r.Method, r.RequestURI); return why != "" }() || !strings.HasPrefix(r.URL.Path, "/v1/peers/") {
			return // refused before the target is read (cleanPaths, guardLocal, the mux)
		}
		tg, o, detail := parseTarget(r)
		if o != "" {
			if o != localapi.BadRequest || !strings.HasSuffix(detail, "nothing was sent") {
				t.Fatalf("%q refused as %s: %q", raw, o, detail)
			}
			return
		}
		if proto.CheckName("peer", tg.Peer) != nil || proto.CheckName("app", tg.App) != nil {
			t.Fatalf("%q accepted with peer %q and app %q", raw, tg.Peer, tg.App)
		}
		path, _, _ := strings.Cut(tg.PathQuery, "?")
		if !strings.HasPrefix(tg.PathQuery, "/") || strings.ContainsRune(tg.PathQuery, 0) || proto.UncleanPath(path) != "" {
			t.Fatalf("%q accepted with the path %q", raw, tg.PathQuery)
		}
		if w := tg.Wait; w.Said < 0 || w.Said > proto.MaxTimeout || w.Else != proto.DefaultTimeout || (w.Said == 0) != (r.Header.Get(localapi.HeaderTimeout) == "") {
			t.Fatalf("%q accepted with the wait %+v", raw, w)
		}
		if path != "/" && !strings.HasSuffix(r.URL.EscapedPath(), path) || (r.URL.RawQuery != "") != strings.Contains(tg.PathQuery, "?") {
			t.Fatalf("%q: the path after the names, %q, is not what the app wrote (%q)", raw, tg.PathQuery, r.URL.EscapedPath())
		}
	})
}
