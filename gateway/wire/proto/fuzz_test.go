package proto

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseTimeout: a value is accepted only as digits with at most three
// decimals, strictly between 0 and 600 s; what is accepted formats back to
// the same duration (to the millisecond).
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"", "30", "2.5", "0", "0.000", "600", "600.001", "1e3", " 1", "+1", "-1", "0x10", "1.2345", "NaN", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := ParseTimeout(v)
		if err != nil {
			if !strings.Contains(err.Error(), "X-Delta-Timeout") {
				t.Fatalf("%q: the error does not name the header: %v", v, err)
			}
			return
		}
		if d <= 0 || d > MaxTimeout {
			t.Fatalf("%q accepted as %v", v, d)
		}
		if v != "" && strings.TrimLeft(v, "0123456789.") != "" {
			t.Fatalf("%q accepted with a character that is not a digit or a point", v)
		}
		back, err := ParseTimeout(FormatTimeout(d))
		if err != nil || back.Milliseconds() != max(d.Milliseconds(), 1) {
			t.Fatalf("%q → %v → %q → %v %v", v, d, FormatTimeout(d), back, err)
		}
	})
}

// FuzzCheckRequestID: what passes is 1–128 of the allowed characters, not
// only dots, and so safe in a header, a path segment and a log line.
func FuzzCheckRequestID(f *testing.F) {
	for _, s := range []string{"5f0c9a4e-8d1b-4f0e-9a57-0d6c2c1f3b11", "", ".", "..", "a/b", "a b", "a\nb", "ünï", strings.Repeat("a", 129), "a:b~c_d.e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if CheckRequestID(id) != nil {
			return
		}
		if id == "" || len(id) > 128 || strings.Trim(id, ".") == "" {
			t.Fatalf("%q accepted", id)
		}
		for _, r := range id {
			if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._~:-", r)) {
				t.Fatalf("%q accepted with %q", id, r)
			}
		}
		if url.PathEscape(id) != id {
			t.Fatalf("%q needs escaping in a path", id)
		}
	})
}

// FuzzCheckName: a peer or app name is 1–63 characters of A-Z a-z 0-9 . _ -,
// starting with a letter or digit: never a path separator, a dot segment or
// an escape.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"studio", "notes", "", ".", "..", "a/b", "-x", "a%2e", strings.Repeat("n", 64), "Ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckName("app", s) != nil {
			return
		}
		if s == "" || len(s) > 63 || s == "." || s == ".." || strings.ContainsAny(s, "/%\\?#") || s[0] == '.' || s[0] == '-' {
			t.Fatalf("%q accepted", s)
		}
	})
}

// FuzzUncleanPath: a path UncleanPath accepts is one that path cleaning
// leaves as it is, so ServeMux has nothing to redirect and an app's path
// cannot climb out of its prefix.
func FuzzUncleanPath(f *testing.F) {
	for _, s := range []string{"/v1/peers/a/b/c", "/v1/peers/a/b/../c", "/v1//x", "/./x", "/x/", "/x/..", "/", "/a/.b/c..", "/%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") || UncleanPath(p) != "" {
			return
		}
		for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
			if p != "/" && (seg == "" || seg == "." || seg == "..") {
				t.Fatalf("%q accepted with segment %q", p, seg)
			}
		}
		// Joined under an app's prefix, it stays under it.
		if joined := "/delta/v1/apps/notes" + p; !strings.HasPrefix(cleanLike(joined), "/delta/v1/apps/notes") {
			t.Fatalf("%q climbs out of the app's prefix: %q", p, cleanLike(joined))
		}
	})
}

// cleanLike is path cleaning as ServeMux does it, kept to the point here:
// it resolves ".." against the segments before it.
func cleanLike(p string) string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// FuzzDigest: the digest is deterministic, 64 hex digits, and changes with
// any part of the request. Its fields are NUL-framed, which is unambiguous
// because method, app and path never hold NUL (Delta checks them before):
// the property is tested for such requests.
func FuzzDigest(f *testing.F) {
	f.Add("POST", "notes", "/a?b=1", []byte("x"))
	f.Add("PUT", "n", "/", []byte{})
	f.Fuzz(func(t *testing.T, m, app, pq string, body []byte) {
		if strings.ContainsRune(m+app+pq, 0) {
			return // refused before a digest is made
		}
		d := Digest(m, app, pq, body)
		if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" || d != Digest(m, app, pq, body) {
			t.Fatalf("digest %q", d)
		}
		if Digest(m, app, pq, append(append([]byte{}, body...), 'x')) == d || Digest(m, app, pq+"x", body) == d || Digest(m+"x", app, pq, body) == d {
			t.Fatalf("a changed request has the same digest")
		}
		// The fields are framed: moving a byte from one to the next changes it.
		if len(app) > 0 && Digest(m, app[:len(app)-1], app[len(app)-1:]+pq, body) == d {
			t.Fatalf("app %q / path %q: the boundary is not in the digest", app, pq)
		}
	})
}
