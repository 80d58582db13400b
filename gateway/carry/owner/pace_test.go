package owner

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/delta-roads/delta/gateway/net/gcpace"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// TestPacedAtTheDoor: a read for an app here marks Delta busy for the
// collector's pace (gcpace); a ping at the door, as a road's check, does
// not.
func TestPacedAtTheDoor(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "r") }))
	t.Cleanup(app.Close)
	h := testDoor(t, t.TempDir(), app.URL)
	serve := func(target string) int {
		r := httptest.NewRequest("GET", target, nil)
		r.RemoteAddr = "127.0.0.2:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	gcpace.Settle()
	gcpace.Settle()
	if code := serve(proto.PathPing); code != http.StatusNoContent || gcpace.Settle() {
		t.Fatalf("a ping: %d, or it counted as an app's request", code)
	}
	if code := serve(proto.PathApps + "notes/r"); code != http.StatusOK || !gcpace.Settle() {
		t.Fatalf("a read: %d, or it did not count", code)
	}
}
