package proto

import (
	"net/http"
	"strings"
	"testing"
)

func TestMethods(t *testing.T) {
	for _, tc := range []struct {
		method, uri string
		read, call  bool
		refused     int
	}{
		{"GET", "/x", true, false, 0},
		{"HEAD", "/x", true, false, 0},
		{"OPTIONS", "/x", true, false, 0},
		{"OPTIONS", "*", true, false, 405},
		{"POST", "/x", false, true, 0},
		{"POST", "*", false, true, 400},
		{"0", "*", false, true, 400},
		{"0", "A:0", false, true, 400},
		{"GET", "http://studio/x", true, false, 0},
		{"GET", "x", true, false, 400},
		{"PROPFIND", "/x", true, false, 0},
		{"REPORT", "/x", true, false, 0},
		{"SEARCH", "/x", true, false, 0},
		{"QUERY", "/x", true, false, 0},
		{"MKCOL", "/x", false, true, 0},
		{"MOVE", "/x", false, true, 0},
		{"BREW", "/x", false, true, 0},
		{"CONNECT", "example.com:443", false, false, 405},
		{"TRACE", "/x", false, false, 405},
	} {
		status, why := Refused(tc.method, tc.uri)
		if IsRead(tc.method) != tc.read || IsCall(tc.method) != tc.call || status != tc.refused || (why != "") != (status != 0) {
			t.Errorf("%s %s: read %v call %v refused %d %q", tc.method, tc.uri, IsRead(tc.method), IsCall(tc.method), status, why)
		}
	}
}

func TestIsUpgrade(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want bool
	}{
		{http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, true},
		{http.Header{"Connection": {"keep-alive, upgrade"}, "Upgrade": {"websocket"}}, true},
		{http.Header{"Upgrade": {"websocket"}}, false},
		{http.Header{"Connection": {"upgrade"}}, false},
	} {
		if IsUpgrade(tc.h) != tc.want {
			t.Errorf("%v: %v", tc.h, !tc.want)
		}
	}
}

func TestSplitTarget(t *testing.T) {
	for _, tc := range []struct {
		in, name, rest, err string
	}{
		{"beta/notes/x", "beta", "/notes/x", ""},
		{"b%65ta/notes/x%2Fy", "beta", "/notes/x%2Fy", ""},
		{"beta", "beta", "/", ""},
		{"beta/", "beta", "/", ""},
		{"b%2Fta/x", "", "", "peer name"},
		{"b%zzta/x", "", "", "not a valid escaped"},
		{"-bad/x", "", "", "peer name"},
	} {
		name, rest, err := SplitTarget(tc.in, "peer")
		if name != tc.name || rest != tc.rest || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %q %q %v", tc.in, name, rest, err)
		}
	}
}
