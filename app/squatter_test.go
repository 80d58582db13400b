package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/kit"
)

// squatter listens on addr and keeps every byte it is sent.
type squatter struct {
	mu  sync.Mutex
	got []byte
	n   int // connections
}

func startSquatter(t *testing.T, addr string) *squatter {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the squatter cannot take %s: %v", addr, err)
	}
	s := &squatter{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.n++
			s.mu.Unlock()
			go func() {
				defer conn.Close()
				// Answer like a web server that is not Delta, and keep
				// whatever comes.
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				b, _ := io.ReadAll(io.LimitReader(conn, 1<<20))
				s.mu.Lock()
				s.got = append(s.got, b...)
				s.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *squatter) received() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.got), s.n
}

// TestSquatterGetsNothing: a process that takes a dead Delta's port is
// sent no token and no body, by the kit or the command line; they say
// Delta is down (nothing was sent). When local.json names a process that
// is gone, it is removed as proven stale and nothing connects at all;
// when it names one that runs (a pid reused), the listener is asked to
// prove it holds the folder's token first, and cannot.
func TestSquatterGetsNothing(t *testing.T) {
	laptop, _, _ := startPair(t)
	tok := laptop.c.Token
	lf, err := localapi.ReadLocal(laptop.dir)
	if err != nil {
		t.Fatal(err)
	}
	laptop.kill(t)
	sq := startSquatter(t, strings.TrimPrefix(lf.URL, "http://"))

	for _, stale := range []bool{true, false} {
		if !stale {
			// local.json naming a process that runs: this test's own.
			lf.PID = os.Getpid()
			b, _ := json.Marshal(lf)
			if err := os.WriteFile(filepath.Join(laptop.dir, "local.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		kc, err := kit.Open(laptop.dir)
		var down *kit.DeltaDown
		if err == nil { // direct.json was left: Open succeeds, requests are refused
			_, err = kc.Call(context.Background(), "studio", "notes", "POST", "/answer/squat", []byte("the secret body"), nil)
			if _, serr := kc.Status(context.Background()); !errors.As(serr, &down) {
				t.Errorf("status through a squatter (stale %v): %v", stale, serr)
			}
			kc.Close()
		}
		if !errors.As(err, &down) || !strings.Contains(err.Error(), "nothing was sent") {
			t.Errorf("a call through a squatter (stale %v): %v", stale, err)
		}
		if _, err := os.Stat(filepath.Join(laptop.dir, "local.json")); stale && err == nil {
			t.Errorf("the stale local.json was not removed")
		}
		for _, args := range [][]string{
			{"status"},
			{"call", "studio", "notes", "/answer/squat", "--data", "the secret body"},
			{"settle", "some-id", "--carried-out"},
		} {
			_, errOut, code := delta(t, append([]string{"--state-dir", laptop.dir}, args...)...)
			if code != cli.ExitDeltaDown {
				t.Errorf("delta %s through a squatter (stale %v): exit %d, %s", args[0], stale, code, errOut)
			}
		}
	}
	got, conns := sq.received()
	if strings.Contains(got, tok) || strings.Contains(got, "secret body") || strings.Contains(got, "Authorization") {
		t.Errorf("the squatter received the token or the body:\n%s", got)
	}
	t.Logf("the squatter was connected to %d times and received %d bytes (the proofs' nonces only)", conns, len(got))
}
