package owner

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestFlowBody: a flowing call's body reaches the app's end (io.EOF)
// only when the caller's count came and names what arrived; every other
// end is an error, which ends the app's stream as reset, and the bytes
// read with it are not passed on.
func TestFlowBody(t *testing.T) {
	broke := errors.New("connection reset")
	for _, tc := range []struct {
		name     string
		body     io.Reader
		passed   []string // the trailer's values; nil: not announced
		declared int64
		max      int64
		want     string // "" for a whole body
	}{
		{name: "whole", body: strings.NewReader("hello"), passed: []string{"5"}, declared: -1},
		{name: "whole, its length said", body: strings.NewReader("hello"), passed: []string{"5"}, declared: 5},
		{name: "the count is not what arrived", body: strings.NewReader("hello"), passed: []string{"6"}, declared: -1, want: "read 6 bytes"},
		{name: "ended without its count", body: strings.NewReader("hello"), passed: []string{""}, declared: -1, want: "without the caller's count"},
		{name: "shorter than said", body: strings.NewReader("hello"), passed: []string{"5"}, declared: 9, want: "5 bytes of the 9 announced"},
		{name: "longer than said", body: strings.NewReader("hello"), passed: []string{"5"}, declared: 3, want: "longer than the 3 bytes"},
		{name: "over the limit", body: strings.NewReader("hello"), passed: []string{"5"}, declared: -1, max: 4, want: "over the limit of 4 bytes"},
		{name: "broke off", body: io.MultiReader(strings.NewReader("hel"), iotest.ErrReader(broke)), passed: []string{"5"}, declared: -1, want: "broke off after 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/x", nil)
			r.Body = io.NopCloser(iotest.OneByteReader(tc.body))
			r.Trailer = http.Header{proto.HeaderBodyPassed: tc.passed}
			max := tc.max
			if max == 0 {
				max = 1 << 20
			}
			f := &flowBody{r: r, max: max, declared: tc.declared}
			got, err := io.ReadAll(f)
			if tc.want == "" {
				if err != nil || string(got) != "hello" {
					t.Fatalf("%q %v, want hello and its end", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q %v, want an error that says %q", got, err, tc.want)
			}
			if n, err2 := f.Read(make([]byte, 8)); n != 0 || err2 != err {
				t.Errorf("a read after the end: %d %v, want the same error", n, err2)
			}
		})
	}
}

// TestFlowBodyStopped: a flowing call's body that its call outlived
// (its answer ended first) ends as stopped, never as whole.
func TestFlowBodyStopped(t *testing.T) {
	r := httptest.NewRequest("POST", "/x", strings.NewReader("hello"))
	r.Trailer = http.Header{proto.HeaderBodyPassed: {"5"}}
	f := &flowBody{r: r, max: 1 << 20, declared: -1}
	f.stop(http.NewResponseController(httptest.NewRecorder()))
	if n, err := f.Read(make([]byte, 8)); n != 0 || !errors.Is(err, errFlowStopped) {
		t.Fatalf("%d %v, want %v", n, err, errFlowStopped)
	}
}
