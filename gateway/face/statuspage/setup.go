package statuspage

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// The setup page (issue 66: no Terminal needed): this computer, the apps
// it shares and those its peers share, each opened with a click, and the
// Deltas nearby to pair. It is a client of the local API (Page.API),
// served in process with the local token: every action is one the
// command line and the kits also have, never a second implementation.

//go:embed setup.html
var setupHTML string

var setupPage = template.Must(template.Must(statusPage.Clone()).New("setup").Funcs(setupFuncs).Parse(setupHTML))

// setupFuncs are the setup page's own template functions.
var setupFuncs = template.FuncMap{
	"copyjs":       func() template.JS { return template.JS(copyJS) },
	"qr":           qrImage,
	"appguess":     appGuess,
	"timeoutwords": timeoutWords,
	"pairwords":    localapi.PairedPeer.StateWords,
}

// qrImage is a QR code of s (this computer's ID) as a PNG data: URL, for
// another computer's camera to read, or "" if it cannot be drawn.
// skip2/go-qrcode draws it: a small, dependency-free encoder, where
// writing QR's Reed-Solomon and masking here would be code of our own.
func qrImage(s string) template.URL {
	png, err := qrcode.Encode(s, qrcode.Medium, 192)
	if err != nil {
		return ""
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
}

// timeoutWords says an app's own timeout (localapi.App.Timeout) for a
// person.
func timeoutWords(t string) string {
	switch t {
	case "":
		return "as its caller says (30 s from the local API, no limit through a forward)"
	case "none":
		return "as long as it takes"
	}
	return t + " s for its answer to begin"
}

// copyJS is the page's one script: a button with data-copy puts its
// value on the clipboard. The Content-Security-Policy allows it by its
// hash (scriptHash) and nothing else.
const copyJS = `document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var was = b.textContent;
  navigator.clipboard.writeText(b.dataset.copy).then(function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = was; }, 1500); },
    function () { b.textContent = "Select and copy it"; });
});`

var scriptHash = func() string {
	h := sha256.Sum256([]byte(copyJS))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}()

// peerWait bounds the setup page's questions to the peers about their
// apps, all asked at once: a peer that cannot answer by then is shown so.
const peerWait = 3 * time.Second

// setupData is what setup.html draws.
type setupData struct {
	Base, CSRF, Flash string
	Now               time.Time
	Mark              template.URL
	Snap              view.Snapshot
	Apps              []localapi.App
	// Suggest are the programs listening here not shared yet
	// (SuggestShared: some were left out so), or SuggestErr why none are
	// known.
	Suggest       []localapi.Listening
	SuggestShared bool
	SuggestErr    string
	Peers         []peerApps
	// Pairing is static mode's, or PairingErr why there is none.
	Pairing    *localapi.Pairing
	PairingErr string
	// Nearby are the Deltas heard nearby, less those asking to pair
	// (listed once, with Accept).
	Nearby []localapi.Nearby
}

// peerApps is a peer's shared apps on the setup page, or why they are
// not known.
type peerApps struct {
	Name string
	Apps []localapi.PeerApp
	Err  string
}

// apiWriter is the answer of the local API to one of the page's requests.
type apiWriter struct {
	h    http.Header
	code int
	buf  bytes.Buffer
}

func (w *apiWriter) Header() http.Header { return w.h }
func (w *apiWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *apiWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(p)
}

// api makes one request of the local API with the local token, in
// process: in (if not nil) as its JSON body, its answer into out (if not
// nil). A refusal is an error that says the local API's words.
func (p *Page) api(ctx context.Context, method, path string, in, out any) error {
	if p.API == nil {
		return errors.New("this page has no local API to ask")
	}
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1"+path, body)
	if err != nil {
		return err
	}
	req.RemoteAddr, req.RequestURI = "127.0.0.1:0", path // as a server would have read it
	req.Header.Set("Authorization", "Bearer "+p.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &apiWriter{h: http.Header{}}
	p.API.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 300 {
		var e localapi.ErrorBody
		if json.Unmarshal(w.buf.Bytes(), &e) == nil && e.Detail != "" {
			return errors.New(e.Detail)
		}
		return fmt.Errorf("the local API answered %d to %s %s", w.code, method, path)
	}
	if out == nil || w.buf.Len() == 0 {
		return nil
	}
	return json.Unmarshal(w.buf.Bytes(), out)
}

// handleSetup draws the setup page. Its peers are asked about their apps
// all at once, within peerWait.
func (p *Page) handleSetup(w http.ResponseWriter, r *http.Request) {
	s := r.Context().Value(sessionKey{}).(*pageSession)
	snap, err := p.Source.Snapshot(r.Context())
	if err != nil {
		pageError(w, http.StatusServiceUnavailable, "Delta could not read its journal: "+err.Error())
		return
	}
	d := setupData{Base: s.base(), CSRF: s.csrf, Now: p.now(), Snap: snap, Mark: newPageData(snap, p.now(), "", "", "").Mark}
	p.mu.Lock()
	d.Flash, s.flash = s.flash, ""
	p.mu.Unlock()
	var apps struct {
		Apps []localapi.App `json:"apps"`
	}
	if err := p.api(r.Context(), http.MethodGet, localapi.AppsPath, nil, &apps); err != nil {
		pageError(w, http.StatusServiceUnavailable, "Delta could not list this computer's apps: "+err.Error())
		return
	}
	d.Apps = apps.Apps
	var ports struct {
		Ports []localapi.Listening `json:"ports"`
	}
	if err := p.api(r.Context(), http.MethodGet, localapi.ListeningPath, nil, &ports); err != nil {
		d.SuggestErr = err.Error()
	}
	for _, l := range ports.Ports {
		if l.App != "" {
			d.SuggestShared = true
			continue
		}
		d.Suggest = append(d.Suggest, l)
	}
	p.pairingFor(r.Context(), &d)
	d.Peers = make([]peerApps, len(snap.Peers))
	ctx, cancel := context.WithTimeout(r.Context(), peerWait)
	defer cancel()
	var wg sync.WaitGroup
	for i, peer := range snap.Peers {
		d.Peers[i].Name = peer.Name
		wg.Go(func() {
			var v localapi.PeerApps
			if err := p.api(ctx, http.MethodGet, localapi.PeerAppsOf(peer.Name), nil, &v); err != nil {
				d.Peers[i].Err = err.Error()
				return
			}
			d.Peers[i].Apps = v.Apps
		})
	}
	wg.Wait()
	var buf bytes.Buffer
	if err := setupPage.ExecuteTemplate(&buf, "setup", d); err != nil {
		pageError(w, http.StatusInternalServerError, "Delta could not draw its setup page: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(visible(buf.Bytes()))
}

// forwardFor is this computer's forward to app on peer: the one it has,
// as it is (its address, its token and its timeout are a person's
// choices), else a new one (PUT /v1/forwards/PEER/APP).
func (p *Page) forwardFor(ctx context.Context, peer, app string) (localapi.Forward, error) {
	var list struct {
		Forwards []localapi.Forward `json:"forwards"`
	}
	if err := p.api(ctx, http.MethodGet, localapi.ForwardsPath, nil, &list); err != nil {
		return localapi.Forward{}, err
	}
	for _, f := range list.Forwards {
		if f.Peer == peer && f.App == app && f.Open {
			return f, nil
		}
	}
	var f localapi.Forward
	err := p.api(ctx, http.MethodPut, localapi.ForwardPath(peer, app), localapi.ForwardRequest{}, &f)
	return f, err
}

// appGuess is a name to share a listening program by: its own, as an
// app name may be written ("app" when the OS did not name it).
func appGuess(program string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(program) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '_' || r == '.':
			if b.Len() > 0 {
				b.WriteRune(r)
			}
		}
		if b.Len() == 63 {
			break
		}
	}
	if b.Len() == 0 {
		return "app"
	}
	return b.String()
}

// handleSetupAction does one of the setup page's actions, each one
// request of the local API: share an app (PUT /v1/apps/NAME), stop
// sharing it (DELETE), open another computer's app (PUT
// /v1/forwards/PEER/APP, then the browser is sent to it), or close this
// computer's address for it (DELETE).
func (p *Page) handleSetupAction(w http.ResponseWriter, r *http.Request) {
	s := p.actionForm(w, r)
	if s == nil {
		return
	}
	ctx := r.Context()
	var flash, at string
	switch action, name, peer := r.PathValue("action"), r.PathValue("name"), r.PathValue("peer"); {
	case action == "share" && name == "":
		name, u := strings.TrimSpace(r.PostForm.Get("name")), strings.TrimSpace(r.PostForm.Get("url"))
		var a localapi.App
		if err := p.api(ctx, http.MethodPut, localapi.AppPath(name), localapi.AppRequest{URL: u}, &a); err != nil {
			flash = fmt.Sprintf("%s was not shared: %v", name, err)
		} else {
			flash, at = fmt.Sprintf("%s (%s) is shared with your other computers.", a.App, a.URL), "app-"+a.App
		}
	case action == "stop" && peer == "" && name != "":
		if err := p.api(ctx, http.MethodDelete, localapi.AppPath(name), nil, nil); err != nil {
			flash = fmt.Sprintf("%s was not unshared: %v", name, err)
		} else {
			flash, at = fmt.Sprintf("%s is no longer shared: your other computers' requests to it are refused, nothing carried out.", name), "share"
		}
	case action == "open":
		f, err := p.forwardFor(ctx, peer, name)
		if err != nil {
			pageError(w, http.StatusBadGateway, fmt.Sprintf("%s on %s could not be opened: %v", name, peer, err))
			return
		}
		to := f.URL
		if f.BrowserURL != "" {
			to = f.BrowserURL // its cookies its own
		}
		if u, err := url.Parse(to); err != nil || u.Scheme != "http" || !slices.Contains([]string{"127.0.0.1", "::1"}, u.Hostname()) && !strings.HasSuffix(u.Hostname(), ".localhost") {
			pageError(w, http.StatusInternalServerError, fmt.Sprintf("the forward's address %q is not one on this computer; it was not opened", to))
			return
		}
		// Not a redirect: a forward refuses a browser another page sent
		// it to (its guard against other sites, DESIGN §2b). The desktop
		// opens it as an address of the person's own.
		switch {
		case p.OpenURL == nil:
			flash = fmt.Sprintf("%s on %s is at %s here: open that address in your browser.", name, peer, to)
		case p.OpenURL(to) != nil:
			flash = fmt.Sprintf("%s on %s is at %s here; the browser could not be asked to open it: open that address yourself.", name, peer, to)
		default:
			flash = fmt.Sprintf("%s on %s opens in your browser, at %s.", name, peer, to)
		}
		at = "peer-" + peer + "-" + name
	case action == "stop":
		if err := p.api(ctx, http.MethodDelete, localapi.ForwardPath(peer, name), nil, nil); err != nil {
			flash = fmt.Sprintf("The address here for %s on %s was not closed: %v", name, peer, err)
		} else {
			flash, at = fmt.Sprintf("The address here for %s on %s is closed; Open makes a new one.", name, peer), "open"
		}
	default:
		pageError(w, http.StatusNotFound, fmt.Sprintf("%q is not an action of the setup page.", action))
		return
	}
	p.mu.Lock()
	s.flash = flash
	p.mu.Unlock()
	to := s.base() + "setup"
	if at != "" {
		to += "#" + url.PathEscape(at)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
