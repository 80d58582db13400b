package relay

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestCopySummed: what is written is the source's start, all of it
// when the source ends well, and then the sum is of exactly that,
// whatever the pieces the source gives; a source or a writer that fails
// stops the copy with its error.
func TestCopySummed(t *testing.T) {
	body := make([]byte, 3<<20+12345)
	for i := range body {
		body[i] = byte(i * 31)
	}
	sumOf := func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
	broke := errors.New("the source broke")
	for _, tc := range []struct {
		name    string
		src     io.Reader
		dst     *limitedWriter
		wantN   int
		wantErr error
	}{
		{"whole", bytes.NewReader(body), &limitedWriter{max: -1}, len(body), nil},
		{"one byte a read", io.LimitReader(iotest.OneByteReader(bytes.NewReader(body)), 70000), &limitedWriter{max: -1}, 70000, nil},
		{"half a piece a read", iotest.HalfReader(bytes.NewReader(body)), &limitedWriter{max: -1}, len(body), nil},
		{"the source breaks", io.MultiReader(bytes.NewReader(body[:1<<20+7]), iotest.ErrReader(broke)), &limitedWriter{max: -1}, 1<<20 + 7, broke},
		{"the source breaks with its last bytes", iotest.DataErrReader(bytes.NewReader(body)), &limitedWriter{max: -1}, len(body), nil},
		{"the writer fills", bytes.NewReader(body), &limitedWriter{max: 2<<20 + 5}, 2<<20 + 5, errFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sha256.New()
			n, err := CopySummed(tc.dst, tc.src, h)
			if n != int64(tc.wantN) || !errors.Is(err, tc.wantErr) {
				t.Fatalf("copied %d (%v), want %d (%v)", n, err, tc.wantN, tc.wantErr)
			}
			if !bytes.Equal(tc.dst.buf.Bytes(), body[:n]) {
				t.Fatal("what was written is not the body's start")
			}
			if tc.wantErr == nil && !bytes.Equal(h.Sum(nil), sumOf(body[:n])) {
				t.Fatal("the sum is not of what was written")
			}
		})
	}
}

var errFull = errors.New("the disk is full")

// limitedWriter takes max bytes (all, when max < 0), then fails.
type limitedWriter struct {
	buf bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.max >= 0 && w.buf.Len()+len(p) > w.max {
		n := w.max - w.buf.Len()
		w.buf.Write(p[:n])
		return n, errFull
	}
	return w.buf.Write(p)
}
