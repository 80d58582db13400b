package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestBigCallCutAt99: a big call whose upload stops at 99 %, when its
// owner's Delta already holds those 99 % in its spool, is never seen by
// the owner app, not even in part: the caller's app hangs up, or the
// caller's Delta is killed (SIGKILL). The call settles not_carried_out
// and the spool is left empty. The same call sent whole reaches the app
// whole, byte for byte: what the cut ones lack is their last 1 %.
func TestBigCallCutAt99(t *testing.T) {
	laptop, studio, app := richPair(t)
	// The body streams from a pattern: held whole here, 96 MiB would stay
	// in this test process's resident memory, which a child it starts
	// next (by fork and exec) reports as its own peak (TestBigCallAndRead
	// measures delta get's).
	const size = 96 << 20
	want := fmt.Sprintf("%d %s", size, patternSum(size))
	cut := int64(size * 99 / 100)
	spool := filepath.Join(studio.dir, "spool")
	// spooled is the most any call's body in studio's spool holds.
	spooled := func() (most int64, files int) {
		ents, _ := os.ReadDir(spool)
		for _, e := range ents {
			if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".body") {
				most, files = max(most, info.Size()), files+1
			}
		}
		return most, files
	}
	asked := 0 // the whole call, once it has gone
	for _, how := range []string{"whole", "the app goes away", "the caller's Delta is killed"} {
		id := "cut99-" + strings.NewReplacer(" ", "-", "'", "").Replace(how)
		conn, err := net.Dial("tcp", strings.TrimPrefix(laptop.c.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/peers/studio/notes/cut99 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nX-Delta-Request-Id: %s\r\nContent-Length: %d\r\n\r\n", laptop.c.Token, id, size)
		body := &patternFile{size: size}
		if _, err := io.CopyN(conn, body, cut); err != nil {
			t.Fatal(err)
		}
		// 99 % has passed both Deltas: the owner's spool holds it.
		gatewaytest.WaitFor(t, 60*time.Second, id+": 99 % in studio's spool", func() bool {
			most, _ := spooled()
			return most >= cut
		})
		if app.hitsOf("/cut99") != asked {
			t.Fatalf("%s: the owner app was asked before the body was whole", how)
		}
		if how == "whole" {
			if _, err := io.Copy(conn, body); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || string(got) != want || app.upload(id) != want {
				t.Fatalf("whole: %s %q; the app kept %q; want %q", resp.Status, got, app.upload(id), want)
			}
			conn.Close()
			asked++
			continue
		}
		cutAndSettle(t, laptop, conn, how, id)
		if got := app.upload(id); got != "" || app.hitsOf("/cut99") != asked {
			t.Errorf("%s: the owner app saw the call (%q; /cut99 asked %d times, the whole call's once)", how, got, app.hitsOf("/cut99"))
		}
		gatewaytest.WaitFor(t, 30*time.Second, how+": studio's spool emptied", func() bool {
			_, files := spooled()
			return files == 0
		})
	}
}
