package statuspage

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// fakeSource is what the page shows: a snapshot with one peer.
type fakeSource struct{}

func (fakeSource) Snapshot(context.Context) (view.Snapshot, error) {
	return view.Snapshot{Self: localapi.Self{Name: "laptop", ID: "SELFID"}, Peers: []localapi.PeerStatus{{Name: "studio"}},
		Nearby: []localapi.Nearby{{ID: "ASKER-ID", Road: "lan", Address: "10.0.0.9:7421"}, {ID: "NEAR-ID", Name: "attic", Road: "lan", Address: "10.0.0.7:7421"}}}, nil
}
func (fakeSource) History(context.Context, string) ([]record.Event, error) { return nil, nil }
func (fakeSource) Ask(context.Context, string) (*record.Call, error)       { return nil, record.ErrNotFound }
func (fakeSource) Dismiss(context.Context, string, string) (*record.Call, error) {
	return nil, record.ErrNotFound
}
func (fakeSource) Settle(context.Context, string, record.CallState, string) (*record.Call, error) {
	return nil, record.ErrNotFound
}
func (fakeSource) CheckReceipt(context.Context, string, string, string, string) (view.Received, error) {
	return view.Received{}, record.ErrNotFound
}

// fakeAPI is the local API as the setup page asks it: it notes each
// request and answers from a small state.
type fakeAPI struct {
	mu    sync.Mutex
	asked []string
	fwd   string // the forward's URL
	have  []localapi.Forward
	// tailnet: the Delta is in tailnet mode (no pairing).
	tailnet bool
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.asked = append(a.asked, r.Method+" "+r.URL.Path+" "+string(b))
	a.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok-1" {
		w.WriteHeader(401)
		json.NewEncoder(w).Encode(localapi.ErrorBody{Error: "unauthorized", Detail: "no token"})
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/apps":
		json.NewEncoder(w).Encode(map[string]any{"apps": []localapi.App{{App: "photos", URL: "http://127.0.0.1:9"}}})
	case "GET /v1/listening":
		json.NewEncoder(w).Encode(map[string]any{"ports": []localapi.Listening{{Address: "127.0.0.1:8384", URL: "http://127.0.0.1:8384", Program: "Syncthing"}}})
	case "GET /v1/peer-apps/studio":
		json.NewEncoder(w).Encode(localapi.PeerApps{Peer: "studio", Apps: []localapi.PeerApp{{App: "notes"}}})
	case "PUT /v1/apps/sync":
		json.NewEncoder(w).Encode(localapi.App{App: "sync", URL: "http://127.0.0.1:8384"})
	case "GET /v1/pairing":
		if a.tailnet {
			w.WriteHeader(409)
			json.NewEncoder(w).Encode(localapi.ErrorBody{Error: "conflict", Detail: "this Delta is in tailnet mode"})
			return
		}
		json.NewEncoder(w).Encode(localapi.Pairing{Self: localapi.Self{Name: "laptop", ID: "SELFID"},
			Requests: []localapi.PairRequest{{ID: "ASKER-ID", Name: "<b>evil</b>", Road: "lan", Address: "10.0.0.9:7421", At: time.Now()}},
			Peers:    []localapi.PairedPeer{{Name: "studio", ID: "STUDIO-ID", Roads: map[string]string{"lan": "10.0.0.2:7421"}, State: localapi.PairAsked}}})
	case "PUT /v1/pairs/kitchen", "POST /v1/pair-requests/ASKER-ID/accept":
		json.NewEncoder(w).Encode(localapi.PairedPeer{Name: "kitchen", State: localapi.PairAsked})
	case "POST /v1/pair-requests/ASKER-ID/ignore":
		json.NewEncoder(w).Encode(localapi.PairedPeer{Name: "<b>evil</b>", State: "ignored"})
	case "DELETE /v1/pairs/studio":
		w.WriteHeader(204)
	case "PUT /v1/name":
		json.NewEncoder(w).Encode(localapi.Self{Name: "lap2"})
	case "GET /v1/forwards":
		json.NewEncoder(w).Encode(map[string]any{"forwards": append([]localapi.Forward{}, a.have...)})
	case "PUT /v1/forwards/studio/notes":
		json.NewEncoder(w).Encode(localapi.Forward{Peer: "studio", App: "notes", URL: a.fwd, Open: true})
	default:
		w.WriteHeader(404)
		json.NewEncoder(w).Encode(localapi.ErrorBody{Error: "not_found", Detail: "no " + r.URL.Path})
	}
}

func (a *fakeAPI) took() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// loggedIn is a page over fakeSource and api, and a session on it: its
// cookie and its page's path.
func loggedIn(t *testing.T, api http.Handler) (p *Page, cookie *http.Cookie, base, csrf string) {
	t.Helper()
	p = &Page{Source: fakeSource{}, Origin: func() string { return "http://127.0.0.1:7420" }, API: api, Token: "tok-1"}
	link, _ := url.Parse(p.LoginLink())
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", link.RequestURI(), nil))
	cookie = w.Result().Cookies()[0]
	base = w.Result().Header.Get("Location")
	for _, s := range p.sessions {
		csrf = s.csrf
	}
	return p, cookie, base, csrf
}

// TestSetupPage: the setup page lists this computer's ID, its shared
// apps, the programs to share (named by the OS), and the apps the peer
// shares, each from the local API asked with the local token; its actions
// are requests of the local API: Share puts the app, Open puts the
// forward and sends the browser to it.
func TestSetupPage(t *testing.T) {
	api := &fakeAPI{fwd: "http://127.0.0.1:41000/"}
	p, cookie, base, csrf := loggedIn(t, api)
	get := httptest.NewRequest("GET", base+"setup", nil)
	get.AddCookie(cookie)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, get)
	page := w.Body.String()
	for _, want := range []string{"Set Up Delta on laptop", "SELFID", `data-copy="SELFID"`, "<b>photos</b>", "<b>Syncthing</b>", `value="syncthing"`,
		`<h3>studio</h3>`, `action="` + base + `page/peers/studio/notes/open"`, "Pair a Computer"} {
		if !strings.Contains(page, want) {
			t.Errorf("the setup page lacks %q:\n%s", want, page)
		}
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src "+scriptHash) || !strings.Contains(page, "<script>"+copyJS+"</script>") {
		t.Errorf("the page's one script is not the one its policy allows: %s", csp)
	}

	post := func(path, form string, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", base+path, strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", origin)
		r.AddCookie(cookie)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w
	}
	w = post("page/apps/share", "csrf="+csrf+"&name=sync&url=http://127.0.0.1:8384", "http://127.0.0.1:7420")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != base+"setup#app-sync" {
		t.Fatalf("share: %d %s", w.Code, w.Header())
	}
	if got := api.took(); got[len(got)-1] != `PUT /v1/apps/sync {"url":"http://127.0.0.1:8384"}` {
		t.Errorf("share asked the local API %v", got)
	}
	var opened []string
	p.OpenURL = func(u string) error { opened = append(opened, u); return nil }
	w = post("page/peers/studio/notes/open", "csrf="+csrf, "http://127.0.0.1:7420")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != base+"setup#peer-studio-notes" || len(opened) != 1 || opened[0] != api.fwd {
		t.Fatalf("open: %d %s; the desktop was asked to open %v", w.Code, w.Header(), opened)
	}
	if !strings.Contains(p.sessionFlash(), "notes on studio opens in your browser, at "+api.fwd) {
		t.Errorf("after Open: %q", p.sessionFlash())
	}

	// A forward there is already is opened as it is (its token, its
	// address), not put again.
	api.have = []localapi.Forward{{Peer: "studio", App: "notes", URL: "http://127.0.0.1:41001/", Open: true, Token: true}}
	puts := len(api.took())
	if w = post("page/peers/studio/notes/open", "csrf="+csrf, "http://127.0.0.1:7420"); w.Code != http.StatusSeeOther || opened[len(opened)-1] != "http://127.0.0.1:41001/" {
		t.Errorf("open of the forward there is: %d, opened %v", w.Code, opened)
	}
	for _, r := range api.took()[puts:] {
		if strings.HasPrefix(r, "PUT ") {
			t.Errorf("the forward there is was put again: %s", r)
		}
	}
	api.have = nil

	// A forward that is not on this computer is not opened.
	api.fwd = "http://example.com/"
	if w = post("page/peers/studio/notes/open", "csrf="+csrf, "http://127.0.0.1:7420"); w.Code == http.StatusSeeOther || len(opened) != 2 {
		t.Errorf("open of a forward elsewhere: %d, opened %v", w.Code, opened)
	}

	// Nobody else: no CSRF token, another origin, no session.
	before := len(api.took())
	for _, tc := range []struct {
		name, form, origin string
		code               int
	}{
		{"without the CSRF token", "name=evil&url=http://127.0.0.1:1", "http://127.0.0.1:7420", 403},
		{"from another origin", "csrf=" + csrf + "&name=evil&url=http://127.0.0.1:1", "http://127.0.0.1:9999", 403},
	} {
		if w := post("page/apps/share", tc.form, tc.origin); w.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.code)
		}
	}
	r := httptest.NewRequest("POST", base+"page/peers/studio/notes/open", strings.NewReader("csrf="+csrf))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://127.0.0.1:7420")
	w = httptest.NewRecorder()
	p.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("without the session's cookie: %d", w.Code)
	}
	if got := api.took(); len(got) != before {
		t.Errorf("a refused action asked the local API: %v", got[before:])
	}
}

// TestAppGuess: a program's name as an app's.
func TestAppGuess(t *testing.T) {
	for in, want := range map[string]string{"Syncthing": "syncthing", "python3.13": "python3.13", "": "app", "-x y": "xy", "日本": "app"} {
		if got := appGuess(in); got != want {
			t.Errorf("appGuess(%q) = %q, want %q", in, got, want)
		}
	}
}

// sessionFlash is the flash the page's one session will show next.
func (p *Page) sessionFlash() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		return s.flash
	}
	return ""
}

// TestFirstRun: a Delta with no computer paired greets a person on its
// status page with the way to begin: pairing one from the setup page (a
// tailnet's own words, to log in, where it has a tailnet).
func TestFirstRun(t *testing.T) {
	page := render(t, view.Snapshot{Self: localapi.Self{Name: "laptop"}}, time.Now(), "")
	if !strings.Contains(page, `No computers paired yet. <a href="/s/KEY/setup#pair">Pair a computer nearby…</a>`) {
		t.Errorf("the first run's page:\n%s", page)
	}
	page = render(t, view.Snapshot{Self: localapi.Self{Name: "laptop"}, Tailnet: &view.TailnetSummary{NeedsLogin: true, Message: "Log in to join your tailnet."}}, time.Now(), "")
	if !strings.Contains(page, "No computers paired yet. Log in to join your tailnet.") || strings.Contains(page, "setup#pair") {
		t.Errorf("the first run's page in tailnet mode:\n%s", page)
	}
}

// TestQRImage: the ID's QR code is a PNG of 192 by 192 pixels, as the
// page draws it, in black and white.
func TestQRImage(t *testing.T) {
	u := string(qrImage("C762AYC-ZDUXLAN-5JYEW4B-TTHK4SE-ZCD72RC-GVK5POE-KSAI2IF-OB7URQP"))
	b64, ok := strings.CutPrefix(u, "data:image/png;base64,")
	if !ok {
		t.Fatalf("%.60s is not a PNG data: URL", u)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 192 || b.Dy() != 192 {
		t.Errorf("the QR code is %v", b)
	}
	dark := 0
	for y := range 192 {
		for x := range 192 {
			if r, _, _, _ := img.At(x, y).RGBA(); r < 0x8000 {
				dark++
			}
		}
	}
	if dark < 192*192/5 || dark > 192*192*4/5 {
		t.Errorf("%d of %d pixels are dark: not a QR code", dark, 192*192)
	}
}

// TestSetupPairing (issue 66): the setup page's pairing section is the
// local API's: the computers asking to pair (their names escaped) with
// Accept and Ignore, the paired peers with their state and Unpair, Pair by
// ID, and Rename; each action is one request of the local API, and none is
// taken without the session's CSRF token.
func TestSetupPairing(t *testing.T) {
	api := &fakeAPI{}
	p, cookie, base, csrf := loggedIn(t, api)
	get := httptest.NewRequest("GET", base+"setup", nil)
	get.AddCookie(cookie)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, get)
	page := w.Body.String()
	for _, want := range []string{"<b>&lt;b&gt;evil&lt;/b&gt;</b> asks to pair", "ASKER-ID", `action="` + base + `page/pair-requests/ASKER-ID/accept"`,
		`action="` + base + `page/pair-requests/ASKER-ID/ignore"`, `id="paired-studio"`, "waiting for a person on studio to accept",
		`action="` + base + `page/pairs/studio/unpair"`, `id="pair-form"`, `id="rename-form"`, "Ask Again", "1 computer asks to pair with this one"} {
		if !strings.Contains(page, want) {
			t.Errorf("the setup page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>evil</b>") {
		t.Error("a stranger's name reached the page unescaped")
	}
	if strings.Count(page, `<tr class="nearby">`) != 1 || !strings.Contains(page, `value="NEAR-ID"`) || strings.Contains(page, `name="id" value="ASKER-ID"`) {
		t.Error("the nearby list does not hold the one Delta heard that is not asking to pair already")
	}
	post := func(path, form string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", base+path, strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://127.0.0.1:7420")
		r.AddCookie(cookie)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct{ path, form, asked, flash string }{
		{"page/pair", "name=kitchen&id=KITCHEN-ID&address=10.0.0.3:7421", `PUT /v1/pairs/kitchen {"id":"KITCHEN-ID","address":"10.0.0.3:7421"}`, "kitchen is paired here, and asked"},
		{"page/pair-requests/ASKER-ID/accept", "name=kitchen", `POST /v1/pair-requests/ASKER-ID/accept {"name":"kitchen"}`, "kitchen is paired here, and asked"},
		{"page/pair-requests/ASKER-ID/ignore", "", `POST /v1/pair-requests/ASKER-ID/ignore {}`, "request is ignored"},
		{"page/pairs/studio/unpair", "", `DELETE /v1/pairs/studio `, "studio is unpaired"},
		{"page/rename", "name=lap2", `PUT /v1/name {"name":"lap2"}`, "This computer is lap2 now"},
		{"page/pair", "name=studio&id=X&address=y", `PUT /v1/pairs/studio {"id":"X","address":"y"}`, "studio was not paired: no /v1/pairs/studio"},
	} {
		form := "csrf=" + csrf
		if tc.form != "" {
			form += "&" + tc.form
		}
		if w := post(tc.path, form); w.Code != http.StatusSeeOther {
			t.Errorf("%s: %d %s", tc.path, w.Code, w.Body)
			continue
		}
		if got := api.took(); got[len(got)-1] != tc.asked {
			t.Errorf("%s asked the local API %q, want %q", tc.path, got[len(got)-1], tc.asked)
		}
		if f := p.sessionFlash(); !strings.Contains(f, tc.flash) {
			t.Errorf("%s: the page says %q, want %q", tc.path, f, tc.flash)
		}
	}
	before := len(api.took())
	for _, path := range []string{"page/pair", "page/pair-requests/ASKER-ID/accept", "page/pairs/studio/unpair", "page/rename"} {
		if w := post(path, "name=x"); w.Code != http.StatusForbidden {
			t.Errorf("%s without the CSRF token: %d", path, w.Code)
		}
	}
	if got := api.took(); len(got) != before {
		t.Errorf("a refused pairing action asked the local API: %v", got[before:])
	}
}

// tailnetSource is fakeSource in tailnet mode, logged in.
type tailnetSource struct{ fakeSource }

func (tailnetSource) Snapshot(context.Context) (view.Snapshot, error) {
	return view.Snapshot{Self: localapi.Self{Name: "laptop", Node: "nNODE"}, Tailnet: &view.TailnetSummary{State: "Running", Message: "logged in; 0 peers",
		Account: "me@example.com", Tailnet: "example.com", ControlURL: "https://controlplane.tailscale.com"}}, nil
}

// TestSetupTailnet (issue 66): in tailnet mode the setup page shows the
// account and the tailnet it is logged in to, in place of pairing.
func TestSetupTailnet(t *testing.T) {
	api := &fakeAPI{tailnet: true}
	p, cookie, base, _ := loggedIn(t, api)
	p.Source = tailnetSource{}
	get := httptest.NewRequest("GET", base+"setup", nil)
	get.AddCookie(cookie)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, get)
	page := w.Body.String()
	for _, want := range []string{`id="tailnet"`, "me@example.com", "<td>example.com</td>", "https://controlplane.tailscale.com", "nothing to pair here"} {
		if !strings.Contains(page, want) {
			t.Errorf("the setup page in tailnet mode lacks %q", want)
		}
	}
	if strings.Contains(page, `id="pair-form"`) || strings.Contains(page, `id="rename-form"`) {
		t.Error("the setup page in tailnet mode offers static mode's pairing")
	}
}
