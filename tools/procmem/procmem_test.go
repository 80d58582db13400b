package procmem

import (
	"os"
	"runtime"
	"testing"
)

// TestRSS reads this test's own resident memory: more than nothing, less
// than the machine's; a process that does not exist reads 0.
func TestRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc (Linux)")
	}
	if rss := RSS(os.Getpid()); rss < 1<<20 || rss > 1<<40 {
		t.Errorf("RSS of this test = %d bytes", rss)
	}
	if rss := RSS(1 << 30); rss != 0 {
		t.Errorf("RSS of no process = %d", rss)
	}
}
