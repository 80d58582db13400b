package forward

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/gcpace"
)

func TestName(t *testing.T) {
	for _, tc := range []struct{ peer, app, label, want string }{
		{"studio", "notes", "k3x9", "notes.studio.k3x9.localhost"},
		{"studio", "notes", "", "notes.studio.localhost"}, // the name before labels
		{"Studio", "Notes", "K3X9", "notes.studio.k3x9.localhost"},
		{"my-mac", "dav2", "q7", "dav2.my-mac.q7.localhost"},
		{"studio", "my_app", "k3x9", ""}, // not a host label
		{"studio.home", "x", "k3x9", ""}, // a dot would make it another name
		{"-studio", "notes", "k3x9", ""}, // a label does not start with a hyphen
		{"studio", "notes-", "k3x9", ""}, // nor end with one
		{"studio", "notes", "a.b", ""},
		{strings.Repeat("a", 63), "x", "k", "x." + strings.Repeat("a", 63) + ".k.localhost"},
	} {
		if got := Name(tc.peer, tc.app, tc.label); got != tc.want {
			t.Errorf("Name(%q, %q, %q) = %q, want %q", tc.peer, tc.app, tc.label, got, tc.want)
		}
	}
	// Each forward's label its own, and a host label.
	a, b := newLabel(), newLabel()
	if a == b || !labelRe.MatchString(a) || len(a) < 12 {
		t.Errorf("labels %q and %q", a, b)
	}
}

// TestGuard: the guard's decisions, from the request alone.
func TestGuard(t *testing.T) {
	d := door{ip: net.ParseIP("127.0.0.1"), port: 4100, name: "notes.studio.k3x9.localhost", plain: "notes.studio.localhost"}
	for _, tc := range []struct {
		name   string
		host   string
		hdr    []string
		kind   hostKind
		refuse string
	}{
		{"its address", "127.0.0.1:4100", nil, bareHost, ""},
		{"localhost", "localhost:4100", nil, bareHost, ""},
		{"its own name", "notes.studio.k3x9.localhost:4100", nil, ownName, ""},
		{"its own name, any case, fully qualified", "Notes.Studio.K3X9.Localhost.:4100", nil, ownName, ""},
		{"its name before labels: as its address", "notes.studio.localhost:4100", nil, bareHost, ""},
		{"another label", "notes.studio.zzzz.localhost:4100", nil, foreignHost, "DNS-rebinding"},
		{"another port", "127.0.0.1:4101", nil, foreignHost, "DNS-rebinding"},
		{"no port (80)", "127.0.0.1", nil, foreignHost, "DNS-rebinding"},
		{"another name", "evil.example:4100", nil, foreignHost, "DNS-rebinding"},
		{"another forward's name", "dav.studio.localhost:4100", nil, foreignHost, "DNS-rebinding"},
		{"another loopback address", "127.0.0.2:4100", nil, foreignHost, "DNS-rebinding"},
		{"its own origin", "127.0.0.1:4100", []string{"Origin", "http://127.0.0.1:4100"}, bareHost, ""},
		{"its own name's origin", "notes.studio.k3x9.localhost:4100", []string{"Origin", "http://notes.studio.k3x9.localhost:4100"}, ownName, ""},
		{"another site's origin", "127.0.0.1:4100", []string{"Origin", "http://evil.example"}, bareHost, "another site"},
		{"Delta's page's origin", "127.0.0.1:4100", []string{"Origin", "http://127.0.0.1:7420"}, bareHost, "another site"},
		{"https origin", "127.0.0.1:4100", []string{"Origin", "https://127.0.0.1:4100"}, bareHost, "another site"},
		{"Origin null", "127.0.0.1:4100", []string{"Origin", "null"}, bareHost, "another site"},
		{"two origins", "127.0.0.1:4100", []string{"Origin", "http://127.0.0.1:4100", "Origin", "http://evil.example"}, bareHost, "more than once"},
		{"typed by its user", "127.0.0.1:4100", []string{"Sec-Fetch-Site", "none"}, bareHost, ""},
		{"its own page", "127.0.0.1:4100", []string{"Sec-Fetch-Site", "same-origin"}, bareHost, ""},
		{"same-site", "127.0.0.1:4100", []string{"Sec-Fetch-Site", "same-site"}, bareHost, "Sec-Fetch-Site: same-site"},
		{"cross-site", "127.0.0.1:4100", []string{"Sec-Fetch-Site", "cross-site"}, bareHost, "Sec-Fetch-Site: cross-site"},
	} {
		r := httptest.NewRequest("POST", "http://x/", nil)
		r.Host = tc.host
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			r.Header.Add(tc.hdr[i], tc.hdr[i+1])
		}
		kind, ref := d.check(r)
		switch {
		case kind != tc.kind:
			t.Errorf("%s: kind %d, want %d", tc.name, kind, tc.kind)
		case tc.refuse == "" && ref != nil:
			t.Errorf("%s: refused: %s", tc.name, ref.Why)
		case tc.refuse != "" && (ref == nil || ref.Status != http.StatusForbidden || !strings.Contains(ref.Why, tc.refuse)):
			t.Errorf("%s: %+v, want a 403 saying %q", tc.name, ref, tc.refuse)
		}
	}
}

func TestCookies(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"sid=1"}, "sid=1"},
		{[]string{"delta_session=page; sid=1", "theme=dark"}, "sid=1; theme=dark"},
		{[]string{"delta_session=page"}, ""},
		{[]string{" delta_session =x ;; a=b "}, "a=b"},
	} {
		if got := Cookies(tc.in, "delta_session"); got != tc.want {
			t.Errorf("Cookies(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSet: a forward is kept with the port it was given, opened again on
// it, moved, changed and removed; bad ones are refused and nothing is
// kept of them; a kept file that is not a list is left as it is.
func TestSet(t *testing.T) {
	dir := t.TempDir()
	served := make(chan Spec, 10)
	cfg := Config{Dir: dir,
		Serve: func(w http.ResponseWriter, r *http.Request, s Spec, a Admitted) { served <- s; w.WriteHeader(204) }}
	s := New(cfg)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := s.Add("studio", "notes", localapi.ForwardRequest{})
	if err != nil || !f.Open || !strings.HasPrefix(f.URL, "http://127.0.0.1:") || f.BrowserURL == "" {
		t.Fatalf("Add: %+v %v", f, err)
	}
	get := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	gcpace.Settle()
	gcpace.Settle()
	if code := get(f.URL + "x"); code != 204 || (<-served).App != "notes" {
		t.Fatalf("through the forward: %d", code)
	}
	if !gcpace.Settle() {
		t.Error("a request through the forward did not mark Delta busy for the collector's pace")
	}
	for _, bad := range []struct{ peer, app, listen, says string }{
		{"studio", "notes", "0.0.0.0:0", "not on a loopback address"},
		{"studio", "notes", "192.168.1.2:80", "not on a loopback address"},
		{"studio", "notes", "127.0.0.1", "not HOST:PORT"},
		{"studio", "notes", "127.0.0.1:70000", "not one of 0-65535"},
		{"stu/dio", "notes", "", "peer name"},
		{"studio", "", "", "app name"},
	} {
		if _, err := s.Add(bad.peer, bad.app, localapi.ForwardRequest{Listen: bad.listen}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Add(%q, %q, %q): %v, want %q", bad.peer, bad.app, bad.listen, err, bad.says)
		}
	}
	if get(f.URL+"x") != 204 {
		t.Fatal("a refused change closed the forward")
	}
	<-served
	// A timeout that is not seconds is refused, naming it; the forward
	// stays as it was.
	if _, err := s.Add("studio", "notes", localapi.ForwardRequest{Timeout: "soon"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `timeout "soon"`) {
		t.Errorf("a timeout of soon: %v", err)
	}
	// The token: the forward asks for a secret of its own (issue 63, D5:
	// never the local token). The timeout is changed in place.
	f2, err := s.Add("studio", "notes", localapi.ForwardRequest{Token: true, Timeout: "45"})
	if err != nil || f2.URL != f.URL || !f2.Token || f2.Timeout != "45" || len(f2.Secret) < 20 {
		t.Fatalf("token on: %+v %v", f2, err)
	}
	if code := get(f.URL + "x"); code != 401 {
		t.Errorf("without the secret: %d", code)
	}
	withSecret := func(u, secret string) int {
		req, _ := http.NewRequest("GET", u, nil)
		req.SetBasicAuth("app", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := withSecret(f.URL+"x", "not-it"); code != 401 {
		t.Errorf("with another secret: %d", code)
	}
	if code := withSecret(f.URL+"x", f2.Secret); code != 204 {
		t.Errorf("with the forward's secret: %d", code)
	}
	<-served
	if again, _ := s.Add("studio", "notes", localapi.ForwardRequest{Token: true, Timeout: "45"}); again.Secret != f2.Secret {
		t.Errorf("asked again, the secret changed: %q, was %q", again.Secret, f2.Secret)
	}
	s.Close()

	// Opened again on the same port.
	s = New(cfg)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if l := s.List(); len(l) != 1 || l[0].URL != f.URL || !l[0].Token || !l[0].Open || l[0].Timeout != "45" || l[0].Secret != f2.Secret {
		t.Fatalf("after a restart: %+v", l)
	}
	// Port 0 on the address it has is the port it has.
	if same, err := s.Add("studio", "notes", localapi.ForwardRequest{Listen: "127.0.0.1:0", Token: true}); err != nil || same.URL != f.URL {
		t.Fatalf("asked again on port 0: %+v %v", same, err)
	}
	// Moved: open on the new address, closed on the old.
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	free.Close()
	moved, err := s.Add("studio", "notes", localapi.ForwardRequest{Listen: free.Addr().String()})
	if err != nil || moved.URL == f.URL || get(moved.URL+"x") != 204 || get(f.URL+"x") != 0 {
		t.Fatalf("moved: %+v %v", moved, err)
	}
	<-served
	if err := s.Remove("studio", "notes"); err != nil || get(moved.URL+"x") != 0 {
		t.Fatalf("remove: %v", err)
	}
	if err := s.Remove("studio", "notes"); !errors.Is(err, ErrNotFound) {
		t.Errorf("remove twice: %v", err)
	}
	s.Close()

	// A port taken at the start: listed as not open, with why.
	s = New(cfg)
	s.Start()
	f, _ = s.Add("studio", "notes", localapi.ForwardRequest{})
	s.Close()
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s = New(cfg)
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "studio/notes on "+f.Listen) {
		t.Errorf("Start with the port taken: %v", err)
	}
	if l := s.List(); len(l) != 1 || l[0].Open || !strings.Contains(l[0].Error, "address already in use") {
		t.Errorf("the list: %+v", l)
	}
	s.Close()

	// A kept file that is not a list: named, left as it is.
	os.WriteFile(filepath.Join(dir, File), []byte("{not json"), 0o600)
	s = New(cfg)
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "left as it is") {
		t.Errorf("Start with a broken file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, File)); string(b) != "{not json" {
		t.Errorf("the file was changed: %q", b)
	}
	s.Close()
}
