package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// conn is one client connection. Its reader goroutine (serve) reads
// frames, decodes them and starts a goroutine per request, up to
// MaxInFlight at once; its writer goroutine writes the responses in
// request order, each once its handler is done. A frame the server cannot
// read closes this connection only, after the responses to the requests
// before it.
type conn struct {
	s      *Server
	nc     net.Conn
	adv    hostPort
	log    *slog.Logger
	ctx    context.Context // ends when the connection dies or the server is stopped hard
	cancel context.CancelFunc

	queue    chan *slot    // requests in order, for the writer
	sem      chan struct{} // in-flight slots
	stopRead atomic.Bool
	dead     atomic.Bool // the writer failed: stop reading

	// SASL state, touched only by the reader goroutine (the SASL
	// requests are handled inline, in order).
	authed bool
	mech   string
	user   string
	scram  *scram.ServerConversation
	// scramFirst and scramServerFirst are the SCRAM exchange's first two
	// messages, for librdkafka's final message (scram_librdkafka.go).
	scramFirst, scramServerFirst string
	closeAfter                   bool // a failed login: close once its answer is written
	rawSASL                      bool // after a SaslHandshake v0: the next frames are bare SASL tokens

	// lastProduce is closed when the connection's latest Produce request
	// is done (reader goroutine only). Produce requests of one connection
	// run one after another, in order, as Kafka's broker runs them: an
	// idempotent producer's pipelined requests carry consecutive
	// sequences, which concurrent appends could reorder.
	lastProduce chan struct{}
}

// slot is one request on its way: its header, and once done is closed,
// its handler's response or error.
type slot struct {
	h    reqHeader
	done chan struct{}
	resp response
	err  error
	// produced, for a Produce, is closed when its handler is done (the
	// next Produce of the connection waits for it).
	produced chan struct{}
}

// reqCtx is what a handler knows of its request and connection.
type reqCtx struct {
	s   *Server
	c   *conn
	hdr *reqHeader
}

func newConn(s *Server, nc net.Conn, adv hostPort) *conn {
	ctx, cancel := context.WithCancel(s.hardCtx)
	return &conn{
		s: s, nc: nc, adv: adv, ctx: ctx, cancel: cancel,
		log:   s.opts.Logger.With("remote", nc.RemoteAddr().String()),
		queue: make(chan *slot, s.opts.MaxInFlight),
		sem:   make(chan struct{}, s.opts.MaxInFlight),
	}
}

// stopReading makes the reader stop at the next frame boundary (or at
// once, if it is waiting for one): Shutdown's first step.
func (c *conn) stopReading() {
	c.stopRead.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	err := c.readLoop()
	if err != nil {
		c.log.Warn("transport: closing connection", "err", err)
	}
	if !errors.Is(err, ErrMalformed) && !c.stopRead.Load() {
		// The client went (or the connection failed): nobody reads the
		// answers, so in-flight requests stop waiting (a parked fetch
		// answers at once; an append not yet begun is not made).
		c.cancel()
	}
	close(c.queue)
	<-writerDone
	c.nc.Close()
	c.cancel()
	c.s.removeConn(c)
}

// readLoop reads requests until the connection ends, the server stops or
// a frame cannot be read; the error is what to log (nil for an orderly
// end).
func (c *conn) readLoop() error {
	br := bufio.NewReaderSize(c.nc, 16<<10)
	var lenBuf [4]byte
	for {
		if c.stopRead.Load() || c.dead.Load() {
			return nil
		}
		c.nc.SetReadDeadline(time.Now().Add(c.s.opts.IdleTimeout))
		if c.stopRead.Load() {
			// stopReading ran between the check above and the deadline,
			// which may have replaced its own: stop now.
			return nil
		}
		n, err := io.ReadFull(br, lenBuf[:])
		if err != nil {
			switch {
			case c.stopRead.Load() || c.dead.Load():
				return nil
			case n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && len(c.sem) > 0:
				continue // idle only while nothing is in flight
			case n == 0 && errors.Is(err, os.ErrDeadlineExceeded):
				return fmt.Errorf("idle for %v", c.s.opts.IdleTimeout)
			case n == 0 && errors.Is(err, io.EOF):
				return nil
			case errors.Is(err, net.ErrClosed), clientGone(err):
				return nil
			}
			return fmt.Errorf("reading a frame length: %w", err)
		}
		size := int32(binary.BigEndian.Uint32(lenBuf[:]))
		if size < 0 || int64(size) > int64(c.s.opts.MaxRequestBytes) {
			return fmt.Errorf("%w: frame length %d outside [0, %d]", ErrMalformed, size, c.s.opts.MaxRequestBytes)
		}
		frame := make([]byte, size)
		c.nc.SetReadDeadline(time.Now().Add(c.s.opts.RequestTimeout))
		if _, err := io.ReadFull(br, frame); err != nil {
			if c.stopRead.Load() {
				return nil
			}
			return fmt.Errorf("reading a %d-byte frame: %w", size, err)
		}
		if c.rawSASL {
			sl := c.saslToken(frame)
			select {
			case c.sem <- struct{}{}:
			case <-c.ctx.Done():
				return nil
			}
			c.queue <- sl
			close(sl.done)
			if c.closeAfter {
				return nil // logged by the handler; a v0 login that fails gets no answer
			}
			continue
		}
		sl, req, a, err := c.decode(frame)
		if err != nil {
			return err
		}
		inline := false
		if c.s.opts.SASL != nil && !c.authed && a != nil {
			switch sl.h.key {
			case kmsg.ApiVersions.Int16():
			case kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
				inline = true
			default:
				return fmt.Errorf("%s before SASL authentication", kmsg.NameForKey(sl.h.key))
			}
		}
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			return nil
		}
		c.queue <- sl
		if a == nil {
			close(sl.done) // answered already (ApiVersions, unsupported version)
			continue
		}
		if inline {
			c.handle(sl, req, a, nil)
			if c.closeAfter {
				return nil // logged by the handler; its answer still goes out
			}
			continue
		}
		var after <-chan struct{}
		if sl.h.key == kmsg.Produce.Int16() {
			after = c.lastProduce
			c.lastProduce = make(chan struct{})
			sl.produced = c.lastProduce
		}
		go c.handle(sl, req, a, after)
	}
}

// decode parses a frame into a slot, its request and its API. An
// ApiVersions request of a version not served gets its answer here (a is
// nil): Kafka's UNSUPPORTED_VERSION in version 0, so that the client can
// retry with one it shares.
func (c *conn) decode(frame []byte) (*slot, kmsg.Request, *api, error) {
	h, body, err := parseHeader(frame)
	if err != nil {
		return nil, nil, nil, err
	}
	sl := &slot{h: h, done: make(chan struct{})}
	if c.log.Enabled(c.ctx, slog.LevelDebug) {
		c.log.Debug("transport: request", "api", kmsg.NameForKey(h.key), "key", h.key, "version", h.version, "client", h.clientID)
	}
	a, ok := lookupAPI(h.key, h.version)
	if a == nil {
		return nil, nil, nil, fmt.Errorf("%w: unknown API key %d (version %d)", ErrMalformed, h.key, h.version)
	}
	if !ok {
		if h.key == kmsg.ApiVersions.Int16() {
			sl.h.version, sl.h.flexible = 0, false
			sl.resp = kmsgResp{apiVersionsResponse(0, kerrUnsupportedVersion)}
			return sl, nil, nil, nil
		}
		return nil, nil, nil, fmt.Errorf("%w: %s version %d not served (%d..%d)", ErrMalformed, kmsg.NameForKey(h.key), h.version, a.min, a.max)
	}
	req, err := decodeRequest(&sl.h, body)
	if err != nil {
		return nil, nil, nil, err
	}
	return sl, req, a, nil
}

// handle runs a request's handler under the request deadline, once after
// (if not nil) is closed.
func (c *conn) handle(sl *slot, req kmsg.Request, a *api, after <-chan struct{}) {
	defer close(sl.done)
	if sl.produced != nil {
		defer close(sl.produced)
	}
	if after != nil {
		select {
		case <-after:
		case <-c.ctx.Done():
		}
	}
	defer func() {
		if r := recover(); r != nil {
			sl.resp = nil
			sl.err = fmt.Errorf("handler panic in %s v%d: %v\n%s", kmsg.NameForKey(sl.h.key), sl.h.version, r, debug.Stack())
		}
	}()
	ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.RequestTimeout)
	defer cancel()
	sl.resp, sl.err = a.h(ctx, &reqCtx{s: c.s, c: c, hdr: &sl.h}, req)
}

// writeLoop writes the responses in request order. After a failed write
// or a handler error it stops writing, closes the connection (which stops
// the reader) and only releases what the remaining handlers return.
func (c *conn) writeLoop() {
	rw := &respWriter{nc: c.nc, raw: c.nc, bw: bufio.NewWriterSize(c.nc, 32<<10)}
	dead := false
	for sl := range c.queue {
		<-sl.done
		if sl.err != nil && !dead {
			c.log.Error("transport: request failed; closing connection", "api", kmsg.NameForKey(sl.h.key), "version", sl.h.version, "err", sl.err)
			dead = true
		}
		if sl.resp != nil {
			if !dead {
				c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
				if err := sl.resp.writeTo(rw, &sl.h); err != nil {
					switch {
					case errors.Is(err, net.ErrClosed):
					case clientGone(err):
						c.log.Debug("transport: client gone before its response", "api", kmsg.NameForKey(sl.h.key), "err", err)
					default:
						c.log.Warn("transport: writing a response; closing connection", "api", kmsg.NameForKey(sl.h.key), "err", err)
					}
					dead = true
				}
			}
			sl.resp.release()
		}
		if dead && !c.dead.Load() {
			c.dead.Store(true)
			c.nc.Close()
		}
		<-c.sem
	}
}

// saslToken handles a bare SASL token, which follows a SaslHandshake v0
// in place of SaslAuthenticate requests: the same exchange, each answer a
// bare token too (an empty one for PLAIN). A failed login is answered by
// closing the connection, as Kafka does for v0, which has no error field.
func (c *conn) saslToken(token []byte) *slot {
	sl := &slot{h: reqHeader{key: kmsg.SASLAuthenticate.Int16()}, done: make(chan struct{})}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = token
	r, _ := handleSASLAuthenticate(c.ctx, &reqCtx{s: c.s, c: c, hdr: &sl.h}, req)
	if c.closeAfter {
		return sl
	}
	sl.resp = rawResp(r.(kmsgResp).r.(*kmsg.SASLAuthenticateResponse).SASLAuthBytes)
	if c.authed {
		c.rawSASL = false
	}
	return sl
}

// rawResp is a bare SASL token answer: a length and the bytes, no header.
type rawResp []byte

func (r rawResp) writeTo(w *respWriter, _ *reqHeader) error {
	if _, err := w.bw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(r)))); err != nil {
		return err
	}
	if _, err := w.bw.Write(r); err != nil {
		return err
	}
	return w.bw.Flush()
}

func (rawResp) release() {}

// clientGone reports whether err says the client closed its end (a
// reset, a broken pipe): a client that exits with requests in flight
// (kcat -e does) is no server problem to warn about.
func clientGone(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// response is a response ready to be written.
type response interface {
	// writeTo writes the whole frame, length and header included.
	writeTo(w *respWriter, h *reqHeader) error
	// release frees what the response holds (segment views).
	release()
}

// respWriter writes response frames to a connection: small parts
// through a buffer, record bytes straight to the connection (sendfile).
type respWriter struct {
	nc  net.Conn  // corked around a fetch response; nil in tests
	raw io.Writer // where record sets go: nc, whose WriteTo may sendfile
	bw  *bufio.Writer
	tmp []byte
}

// kmsgResp is a response kmsg encodes whole.
type kmsgResp struct{ r kmsg.Response }

func (k kmsgResp) writeTo(w *respWriter, h *reqHeader) error {
	buf := append(w.tmp[:0], 0, 0, 0, 0)
	buf = appendResponseHeader(buf, h)
	k.r.SetVersion(h.version)
	buf = k.r.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if cap(buf) <= 64<<10 {
		w.tmp = buf
	}
	if _, err := w.bw.Write(buf); err != nil {
		return err
	}
	return w.bw.Flush()
}

func (kmsgResp) release() {}

// clientHost is the client's address as Kafka's DescribeGroups shows it
// ("/127.0.0.1").
func (c *conn) clientHost() string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return "/" + c.nc.RemoteAddr().String()
	}
	return "/" + host
}
