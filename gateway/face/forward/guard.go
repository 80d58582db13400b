package forward

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Refusal is why a forward refuses a request, with the status it answers.
type Refusal struct {
	Status int
	Why    string
}

// door is what the guard knows of one forward: its port, the loopback
// address it listens on, its own name (APP.PEER.LABEL.localhost; "" when
// the names are not host labels), and the name forwards had before they
// had labels (APP.PEER.localhost), which is served as its bare address
// is: a browser's navigation is sent on to its own name, and a browser's
// cookies for it are not passed on.
type door struct {
	ip    net.IP
	port  int
	name  string
	plain string
}

// Name is the forward's own loopback name for app on peer,
// APP.PEER.LABEL.localhost in lower case (APP.PEER.localhost when label is
// ""), or "" when app or peer is not a host label (RFC 1123: letters,
// digits and inner hyphens; Delta's names may also hold dots and
// underscores). Browsers resolve every *.localhost name to loopback by
// themselves (RFC 6761 §6.3) and keep cookies per host name, not per port:
// under its own name a forward's cookies are its own, and LABEL, random
// and kept with the forward, makes the name one that no other listener
// can be given by a page that does not know it (issue 63, D6: without it,
// a listener on another port under APP.PEER.localhost was sent the app's
// login cookie), and that no other forward shares a parent domain of (D8:
// an app's Domain=PEER.localhost cookie reached the peer's other
// forwards).
func Name(peer, app, label string) string {
	if !labelRe.MatchString(peer) || !labelRe.MatchString(app) || label != "" && !labelRe.MatchString(label) {
		return ""
	}
	if label == "" {
		return strings.ToLower(app + "." + peer + ".localhost")
	}
	return strings.ToLower(app + "." + peer + "." + label + ".localhost")
}

// newLabel is a forward's random name label (nameLabelBytes bytes of
// randomness, lower-case base32).
func newLabel() string {
	b := make([]byte, nameLabelBytes)
	rand.Read(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// nameLabelBytes is how random a forward's name label is: 64 bits (13
// base32 letters), which a page cannot guess by trying names.
const nameLabelBytes = 8

var labelRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// hostKind is how a request named the forward in its Host.
type hostKind int

const (
	foreignHost hostKind = iota
	bareHost             // its loopback address, or localhost
	ownName              // APP.PEER.localhost
)

// host says how hostport (a Host header, or an Origin's host) names d.
// A missing port is port 80.
func (d door) host(hostport string) hostKind {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = hostport, "80"
	}
	if port, err := strconv.Atoi(p); err != nil || port != d.port {
		return foreignHost
	}
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	h = strings.TrimSuffix(h, ".") // a fully qualified spelling
	switch {
	case d.name != "" && h == d.name:
		return ownName
	case h == "localhost" && d.ip.IsLoopback(), d.plain != "" && h == d.plain:
		return bareHost
	}
	if ip := net.ParseIP(h); ip != nil && ip.Equal(d.ip) {
		return bareHost
	}
	return foreignHost
}

// check is the forward's guard (DESIGN §2b), before anything is sent:
//
//   - DNS rebinding: a Host other than the forward's own loopback
//     address (or localhost) or its own name, with its port, is refused;
//   - other sites in a browser: an Origin other than the forward's own
//     (this includes the "simple" POSTs a page sends with no preflight,
//     which carry Origin), or a Sec-Fetch-Site other than same-origin or
//     none (a user's own typing or bookmark) is refused. same-site is
//     refused too: every loopback port is the same site to a browser,
//     and another port is another app, or Delta's page.
//
// It returns how the request named the forward.
func (d door) check(r *http.Request) (hostKind, *Refusal) {
	kind := d.host(r.Host)
	if kind == foreignHost {
		return kind, &Refusal{http.StatusForbidden, fmt.Sprintf("Host %q is not this forward's own loopback address or name (DNS-rebinding guard)", r.Host)}
	}
	if vs := r.Header.Values("Origin"); len(vs) > 0 {
		if len(vs) > 1 {
			return kind, &Refusal{http.StatusForbidden, "the request holds Origin more than once"}
		}
		u, err := url.Parse(vs[0])
		if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" || d.host(u.Host) == foreignHost {
			return kind, &Refusal{http.StatusForbidden, fmt.Sprintf("Origin %q is another site than this forward's own (http://%s); a page of another site may not use it", vs[0], r.Host)}
		}
	}
	switch site := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); site {
	case "", "same-origin", "none":
	default:
		return kind, &Refusal{http.StatusForbidden, fmt.Sprintf("the browser says the request comes from another site (Sec-Fetch-Site: %s); only this forward's own pages, or an address typed by its user, may use it", site)}
	}
	return kind, nil
}

// fromBrowser reports whether r was sent by a browser: every current one
// sends Sec-Fetch-* request headers.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") != "" || r.Header.Get("Sec-Fetch-Site") != ""
}

// Cookies is what of the Cookie headers hs goes to the owner app: every
// cookie but Delta's own page cookie (named page), joined as one header
// (RFC 6265 §5.4). It is "" when none is left.
func Cookies(hs []string, page string) string {
	var out []string
	for _, h := range hs {
		for c := range strings.SplitSeq(h, ";") {
			c = strings.TrimSpace(c)
			name, _, _ := strings.Cut(c, "=")
			if c == "" || strings.TrimSpace(name) == page {
				continue
			}
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}
