package h1

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"sync"
)

// Duplex is a request whose body is written while its answer is read: a
// flowing call (a gRPC stream, docs/protocol.md §1c), whose answer may
// begin, and go on, before its request ends. Once (with Options.Duplex)
// writes the request's head with Expect: 100-continue, reads the peer's
// 100 Continue and then its answer's head on the caller's goroutine, and
// writes the body on a goroutine of its own as the body's reader gives
// it, each piece flushed as a chunk of its own: a message is never held
// back for the next. A body that breaks (its reader's error) ends the
// connection, so the peer sees it cut and never as ended. Stop ends the
// writer.
type Duplex struct {
	mu   sync.Mutex
	c    *onceConn
	done chan struct{}
	err  error
}

// start is the writer's beginning on c.
func (d *Duplex) start(c *onceConn) {
	d.mu.Lock()
	d.c, d.done = c, make(chan struct{})
	d.mu.Unlock()
}

// Stop ends the body's writing (its connection's deadlines pass) and
// waits for the writer to have left; the body's reader must not block it
// (its own reads end too). It returns why the body did not pass whole;
// nil if it did, or if no writer was started.
func (d *Duplex) Stop() error {
	d.mu.Lock()
	c, done := d.c, d.done
	d.mu.Unlock()
	if done == nil {
		return nil
	}
	c.kill()
	<-done
	return d.err
}

// duplexGate holds a duplex request's body back until the peer's 100
// Continue, which the answer's reader reads: its first Read sends the
// head and waits for word (true: continue; false: an answer came
// instead, or none will).
type duplexGate struct {
	body    io.Reader
	bw      *bufio.Writer
	cont    <-chan bool
	opened  bool
	refused bool // an answer came instead of 100 Continue
}

func (g *duplexGate) Read(p []byte) (int, error) {
	if !g.opened {
		g.opened = true
		if err := g.bw.Flush(); err != nil {
			return 0, err
		}
		if !<-g.cont {
			g.refused = true
			return 0, errRefusedEarly
		}
	}
	return g.body.Read(p)
}

func (g *duplexGate) Close() error { return nil }

// onceDuplex is Once for a request with Options.Duplex: c is set up and
// bw lent; it writes req's head and body on a goroutine (Duplex's writer)
// and reads the answer's head here.
func onceDuplex(ctx context.Context, c *onceConn, bw *bufio.Writer, br *bufio.Reader, req *http.Request, opt Options, fail func(*Error) (*Answer, error)) (*Answer, error) {
	d := opt.Duplex
	d.start(c)
	src := &source{rc: req.Body}
	cont := make(chan bool, 1)
	req.Header.Set("Expect", "100-continue")
	g := &duplexGate{body: src, bw: bw, cont: cont}
	req.Body = g
	c.setWrite()
	go func() {
		defer close(d.done)
		err := req.Write(bw)
		if err == nil {
			err = bw.Flush()
		}
		bw.Reset(nil)
		writers.Put(bw)
		switch {
		case g.refused:
			err = errRefusedEarly
		case src.err != nil:
			// The body broke: the peer must see it cut, not wait for
			// the rest of it, nor take what came as all of it. (Its app's
			// client went away, or its call ended: nobody reads the
			// answer on.) The reader is given back by the answer's Close.
			c.kill()
			c.Conn.Close()
			err = src.err
		case err == nil && opt.Written != nil:
			opt.Written()
		}
		d.err = err
	}()
	// Idle bounds the wait for 100 Continue; Wait the answer's head then.
	c.setRead(opt.Idle, true)
	resp, err := readHead(br, req, opt.got1xx(), true)
	if err == nil && resp.StatusCode == http.StatusContinue {
		cont <- true
		c.setRead(opt.Wait, true)
		resp, err = readHead(br, req, opt.got1xx(), false)
	} else {
		cont <- false
	}
	if err != nil {
		err = c.cause(ctx, err)
		return fail(&Error{Op: "read the answer", Sent: c.wrote.Load(), Err: err, Timeout: IsTimeout(err)})
	}
	c.bodyBegins()
	return answer(resp, c, br), nil
}
