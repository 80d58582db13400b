package relay

import (
	"hash"
	"io"
	"sync"
	"sync/atomic"
)

// CopySummed copies src to dst and sums what it copies into h: src is
// read on the calling goroutine, and each piece read is written to dst
// and summed into h on two goroutines of their own, side by side, while
// the next piece is read. A big call's body arrives at its owner through
// one read, one write to the spool and one sum of each piece; done in
// turn they kept one core busy and the rest of the machine waiting (the
// sum alone a third of the owner's work), done side by side they go as
// fast as the slowest of the three while there are cores for them
// (docs/benchmarks.md, round 3, "Goal 1, a big call").
//
// It returns the bytes written to dst and why it stopped: nil at src's
// end, when h holds exactly the bytes written, which are all of src's; or
// src's or dst's error, and then h is not to be used (it may hold a piece
// that dst refused). It holds summedPieces buffers of summedPiece bytes,
// whatever the size of the body, and returns only once both goroutines
// have ended.
func CopySummed(dst io.Writer, src io.Reader, h hash.Hash) (int64, error) {
	var pieces [summedPieces]struct {
		bp   *[]byte
		n    int
		left atomic.Int32 // of the writer and the summer, those not done with it
	}
	free := make(chan int, summedPieces)
	for i := range pieces {
		pieces[i].bp = summedBuffers.Get()
		free <- i
	}
	release := func(i int) {
		if pieces[i].left.Add(-1) == 0 {
			free <- i
		}
	}
	toWrite := make(chan int, summedPieces)
	toSum := make(chan int, summedPieces)
	var written atomic.Int64
	var writeErr error
	var failed atomic.Bool
	wrote, summed := make(chan struct{}), make(chan struct{})
	go func() { // ends when toWrite is closed
		defer close(wrote)
		for i := range toWrite {
			p := &pieces[i]
			if !failed.Load() {
				w, err := dst.Write((*p.bp)[:p.n])
				written.Add(int64(w))
				if err == nil && w < p.n {
					err = io.ErrShortWrite
				}
				if err != nil {
					writeErr = err // read once wrote is closed
					failed.Store(true)
				}
			}
			release(i)
		}
	}()
	go func() { // ends when toSum is closed
		defer close(summed)
		for i := range toSum {
			h.Write((*pieces[i].bp)[:pieces[i].n])
			release(i)
		}
	}()
	var err error
	for !failed.Load() {
		i := <-free
		m, rerr := src.Read(*pieces[i].bp)
		if m > 0 {
			pieces[i].n = m
			pieces[i].left.Store(2)
			toWrite <- i
			toSum <- i
		} else {
			free <- i
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	close(toWrite)
	close(toSum)
	<-wrote
	<-summed
	if writeErr != nil {
		err = writeErr
	}
	for i := range pieces {
		summedBuffers.Put(pieces[i].bp)
	}
	return written.Load(), err
}

// summedPieces and summedPiece bound what CopySummed holds (512 KiB a
// body): a piece being read, the ones being written and summed, and those
// waiting for either. At 128 KiB a 1 GiB call reached its app 1.1x as
// fast as at 32 KiB or 64 KiB, and 1.2x as fast as at 256 KiB, whose
// pieces no longer stay in the CPU's caches between the read, the write
// and the sum (docs/benchmarks.md).
const (
	summedPieces = 4
	summedPiece  = 128 << 10
)

var summedBuffers = &BufferPool{p: sync.Pool{New: func() any { b := make([]byte, summedPiece); return &b }}}
