package cli

import (
	"fmt"

	"io"
	"strings"
	"sync"
	"time"

	"github.com/delta-roads/delta/gateway/wire/view"
)

// progressBar draws a transfer's progress on a terminal (standard error),
// once it has run for a second: bytes, of how many, the rate, and a bar
// when the size is known. Off a terminal it draws nothing.
type progressBar struct {
	w     io.Writer
	label string
	on    bool
	start time.Time

	// call: the bar is a call's body, whose answer comes only after the
	// owner hands the whole body to its app.
	call bool

	mu    sync.Mutex
	drawn bool
	last  time.Time
}

// newProgress returns a bar for a transfer named label, drawn on w when w
// is a terminal.
func newProgress(w io.Writer, label string) *progressBar {
	return &progressBar{w: w, label: label, on: IsTerminal(w), start: time.Now()}
}

// report is kit's progress callback.
func (p *progressBar) report(done, total int64) {
	if !p.on {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 100*time.Millisecond && (total < 0 || done < total) {
		return
	}
	p.last, p.drawn = now, true
	line := progressLine(p.label, done, total, now.Sub(p.start))
	if p.call && total > 0 && done >= total {
		// The body has left; the owner's Delta gets it whole first, then
		// hands it to its app, whose answer comes after that.
		line += "  sent whole: the owner hands it to its app, then answers"
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line) // erase what a longer line left
}

// finish ends the bar's line, if one was drawn.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// progressLine is one state of the bar: "label  12.0 MiB of 100 MiB
// [###-------] 12 %  45.1 MiB/s  2 s, about 15 s left".
func progressLine(label string, done, total int64, took time.Duration) string {
	rate, left := "", ""
	if secs := took.Seconds(); secs > 0 {
		perSec := float64(done) / secs
		rate = fmt.Sprintf("  %s/s  %s", view.Bytes(int64(perSec)), view.Ago(took))
		if total > 0 && done < total && perSec > 0 {
			left = ", about " + view.Ago(time.Duration(float64(total-done)/perSec*float64(time.Second))) + " left"
		}
	}
	if total <= 0 {
		return fmt.Sprintf("%s  %s%s", label, view.Bytes(done), rate)
	}
	const width = 20
	filled := int(min(done, total) * width / total)
	return fmt.Sprintf("%s  %s of %s [%s%s] %3d %%%s%s", label, view.Bytes(done), view.Bytes(total),
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), min(done, total)*100/total, rate, left)
}
