package h1server

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// h2cClient is an HTTP/2 client with prior knowledge (what gRPC clients
// and curl --http2-prior-knowledge are), on plain TCP.
func h2cClient() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// TestHTTP2PriorKnowledge: a door that speaks HTTP/2 serves an h2c
// client's GET and POST (its Host the request's :authority) beside
// HTTP/1.1 on the same port, trailers included.
func TestHTTP2PriorKnowledge(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, r.Proto+" "+r.Method+" "+r.Host+" "+string(b))
		w.Header().Set("X-Sum", "ok")
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	s := New(srv)
	ln := listen(t)
	serve(t, s, ln)
	base := "http://" + ln.Addr().String()
	c := h2cClient()
	defer c.CloseIdleConnections()
	for _, method := range []string{"GET", "POST"} {
		req, _ := http.NewRequest(method, base+"/x", strings.NewReader(map[string]string{"GET": "", "POST": "hello"}[method]))
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s over h2c: %v", method, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := "HTTP/2.0 " + method + " " + ln.Addr().String() + " " + map[string]string{"GET": "", "POST": "hello"}[method]
		if string(b) != want || res.ProtoMajor != 2 || res.Trailer.Get("X-Sum") != "ok" {
			t.Errorf("%s: %s %q (trailer %v), want %q", method, res.Proto, b, res.Trailer, want)
		}
	}
	res, err := http.Get(base + "/y")
	if err != nil || res.ProtoMajor != 1 {
		t.Fatalf("HTTP/1.1 beside it: %v %v", res, err)
	}
	res.Body.Close()
}

// TestHTTP2Refused: a door that speaks HTTP/1.1 only answers an HTTP/2
// preface in HTTP/2, with a GOAWAY (HTTP_1_1_REQUIRED, no stream
// processed) that says so, and its handler never runs.
func TestHTTP2Refused(t *testing.T) {
	ran := false
	s := New(&http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })})
	ln := listen(t)
	serve(t, s, ln)
	// net/http's client says the GOAWAY's code when its request was
	// started before the GOAWAY arrived, and that the connection could
	// not be established when the GOAWAY came first: either way it sent
	// nothing. The frames themselves are read below.
	if _, err := h2cClient().Get("http://" + ln.Addr().String() + "/x"); err == nil ||
		!strings.Contains(err.Error(), "HTTP_1_1_REQUIRED") && !strings.Contains(err.Error(), "could not be established") {
		t.Fatalf("an h2c client was told %v", err)
	}
	c, br := dial(t, ln)
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(nil, bufio.NewReader(br))
	f1, err1 := fr.ReadFrame()
	f2, err2 := fr.ReadFrame()
	if _, ok := f1.(*http2.SettingsFrame); !ok || err1 != nil {
		t.Fatalf("first frame %v %v", f1, err1)
	}
	if g, ok := f2.(*http2.GoAwayFrame); !ok || err2 != nil || g.ErrCode != http2.ErrCodeHTTP11Required || g.LastStreamID != 0 || string(g.DebugData()) != RefusedHTTP2 {
		t.Fatalf("second frame %v %v", f2, err2)
	}
	if ran {
		t.Error("the handler ran for an HTTP/2 preface")
	}
}
