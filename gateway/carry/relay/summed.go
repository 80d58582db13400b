package relay

import (
	"hash"
	"io"
	"sync"
)

// CopySummed copies src to dst and sums every byte written into h, the
// sum a piece behind on a goroutine of its own: while one piece is summed
// the next is read and written. A big call's body arrives at the owner
// through one read, one sum and one write of each piece; done in turn
// they keep one core busy and the rest of the machine waiting (a 1 GiB
// call spent a third of its time summing, docs/benchmarks.md), done
// side by side the sum costs no time while there is a core for it.
//
// It returns the bytes written and why it stopped (nil at src's end, or
// src's or dst's error), only once h holds exactly those bytes. It holds
// summedPieces buffers of summedPiece bytes at most, whatever the size of
// the body.
func CopySummed(dst io.Writer, src io.Reader, h hash.Hash) (int64, error) {
	free := make(chan *[]byte, summedPieces)
	for range summedPieces {
		free <- summedBuffers.Get()
	}
	type piece struct {
		bp *[]byte
		n  int
	}
	full := make(chan piece, summedPieces)
	summed := make(chan struct{})
	go func() { // ends when full is closed, and every piece is summed
		defer close(summed)
		for p := range full {
			h.Write((*p.bp)[:p.n])
			free <- p.bp
		}
	}()
	var n int64
	var err error
	for err == nil {
		bp := <-free
		m, rerr := src.Read(*bp)
		if m > 0 {
			w, werr := dst.Write((*bp)[:m])
			if w > 0 {
				n += int64(w)
				full <- piece{bp, w}
				bp = nil
			}
			if werr == nil && w < m {
				werr = io.ErrShortWrite
			}
			err = werr
		}
		if bp != nil {
			free <- bp
		}
		if err == nil && rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	close(full)
	<-summed
	for range summedPieces {
		summedBuffers.Put(<-free)
	}
	return n, err
}

// summedPieces and summedPiece bound what CopySummed holds (1 MiB a
// body): a piece being read and written, the ones waiting to be summed,
// and the one being summed. A piece takes what a caller's Delta sends in
// one chunk (h1's bigPiece).
const (
	summedPieces = 4
	summedPiece  = 256 << 10
)

var summedBuffers = &BufferPool{p: sync.Pool{New: func() any { b := make([]byte, summedPiece); return &b }}}
