package journal

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// BenchmarkCallWrites is the ceiling the journals put on durable calls:
// both journals' writes for a 1 KiB call, as the caller and the owner
// make them (the caller's "sending" with its attempt and what it sent;
// the owner's lazy receipt, what the call carried, "handed" and the
// answer; the caller's outcome), with 1, 16 and 64 calls in flight, two
// journal files in one process, and nothing else: no HTTP, no
// connections. Calls a second here are more than Delta can carry on this
// machine; CPU a call is what the contract's durable writes cost, every
// core counted (getrusage). `make bench` runs it.
func BenchmarkCallWrites(b *testing.B) {
	for _, inFlight := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("in-flight-%d", inFlight), func(b *testing.B) {
			caller, err := Open(filepath.Join(b.TempDir(), "caller.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer caller.Close()
			owner, err := Open(filepath.Join(b.TempDir(), "owner.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer owner.Close()
			body := make([]byte, 1<<10)
			sent := http.Header{"Content-Type": {"application/octet-stream"}, "X-Delta-Request-Id": {"x"}}
			oneCall := func(id string) error {
				c := &record.Call{RequestID: id, Peer: "studio", App: "bench", Method: "POST", Path: "/c", Digest: "d",
					Attempts: []record.Attempt{{N: 1, Road: "lan", Address: "127.0.0.1:1", StartedAt: time.Now(), FirstByte: true}},
					Request:  record.KeepRequest(sent, body)}
				if existing, err := caller.Calls().Begin(ctx, c); err != nil || existing != nil {
					return fmt.Errorf("sending: %v, %v", existing, err)
				}
				if dec, _, err := owner.Receipts().ReceiveSmall(ctx, &Receipt{Caller: "n1", RequestID: id, Digest: "d", App: "bench", Method: "POST", Path: "/c"}); err != nil || dec != Forward {
					return fmt.Errorf("receipt: %v, %v", dec, err)
				}
				// The writer tells kept before it answers HandReceipt
				// (queued first, it commits no later), so kept is set
				// by the time HandReceipt returns.
				var kept error
				owner.Receipts().KeepReceived(ctx, "n1", id, record.KeepRequest(sent, body), func(err error) { kept = err })
				if err := owner.Receipts().Hand(ctx, "n1", id); err != nil {
					return fmt.Errorf("handed: %w", err)
				}
				if kept != nil {
					return fmt.Errorf("kept: %w", kept)
				}
				ans := &record.Answer{Status: 201, Body: []byte(`{"ok":true}`)}
				if _, err := owner.Receipts().Finish(ctx, "n1", id, proto.ReceiptAnswered, ans); err != nil {
					return fmt.Errorf("answer: %w", err)
				}
				if moved, _, err := caller.Calls().Move(ctx, id, Transition{From: []record.CallState{record.Sending}, To: record.Answered, Outcome: string(localapi.Answered), Answer: ans}); err != nil || !moved {
					return fmt.Errorf("outcome: %v, %w", moved, err)
				}
				return nil
			}
			var next atomic.Int64
			var failed atomic.Pointer[error]
			cpu0 := cpuTime(b)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range inFlight {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) || failed.Load() != nil {
							return
						}
						if err := oneCall(fmt.Sprintf("bench-%d", i)); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatal(*err)
			}
			b.ReportMetric(float64(b.N)/took.Seconds(), "calls/s")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage, for the CPU a call: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
