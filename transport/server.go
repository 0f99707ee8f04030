package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Server serves the Kafka protocol for a Backend. Make one with NewServer,
// run it with Serve on one or more listeners, stop it with Shutdown.
type Server struct {
	b    Backend
	opts Options

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closing   bool
	nconns    atomic.Int64

	// stopping is closed by Shutdown: long-polling fetches answer at once
	// and connections stop reading new requests.
	stopping chan struct{}
	// stopCtx ends when stopping closes, for contexts derived from it.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	// hardStop is cancelled when Shutdown's ctx ends: in-flight handlers
	// give up.
	hardCtx  context.Context
	hardStop context.CancelFunc

	conWG sync.WaitGroup // connections' goroutines

	// onPark, if set (tests), is called each time a fetch parks.
	onPark atomic.Pointer[func()]

	shutdownOnce sync.Once
	shutdownErr  error
	done         chan struct{} // closed when Shutdown completed
}

// NewServer returns a server for b. opts nil means defaults.
func NewServer(b Backend, opts *Options) (*Server, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil Backend", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	hard, stop := context.WithCancel(context.Background())
	stopCtx, stopCancel := context.WithCancel(context.Background())
	return &Server{
		stopCtx: stopCtx, stopCancel: stopCancel,
		b: b, opts: o,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		stopping:  make(chan struct{}),
		hardCtx:   hard, hardStop: stop,
		done: make(chan struct{}),
	}, nil
}

// Serve accepts connections on l and serves them until Shutdown (then it
// returns ErrServerClosed) or until l fails (then it returns that error;
// connections already accepted go on until Shutdown). ctx ending is a
// Shutdown with no deadline for in-flight requests. Serve closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	stop := context.AfterFunc(ctx, func() { s.Shutdown(context.Background()) })
	defer stop()
	adv := s.advertised(l.Addr())
	if s.opts.TLS != nil {
		l = tls.NewListener(l, s.opts.TLS)
	}
	for {
		nc, err := l.Accept()
		if err != nil {
			select {
			case <-s.stopping:
				return ErrServerClosed
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("transport: accept: %w", err)
		}
		if int(s.nconns.Load()) >= s.opts.MaxConns {
			s.opts.Logger.Warn("transport: connection refused: MaxConns reached", "remote", nc.RemoteAddr().String(), "max", s.opts.MaxConns)
			nc.Close()
			continue
		}
		c := newConn(s, nc, adv)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.nconns.Add(1)
		s.conWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// advertised returns the host and port the brokers list names for
// connections accepted on a listener at addr.
func (s *Server) advertised(addr net.Addr) hostPort {
	if s.opts.Advertise != "" {
		h, p, _ := splitHostPort(s.opts.Advertise)
		return hostPort{h, p}
	}
	h, p, err := splitHostPort(addr.String())
	if err != nil {
		return hostPort{"localhost", 9092}
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		h = "localhost"
	}
	return hostPort{h, p}
}

type hostPort struct {
	host string
	port int32
}

// Shutdown stops the server: it stops accepting, answers long-polling
// fetches at once, lets every request already read finish and its
// response be written, and closes the connections. When ctx ends first,
// in-flight requests are abandoned (their contexts end) and connections
// closed at once; Shutdown then returns ctx's error. It is idempotent:
// later calls wait for the first to complete and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.stopping)
		s.stopCancel()
		for l := range s.listeners {
			l.Close()
		}
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.stopReading()
		}
		finished := make(chan struct{})
		go func() { s.conWG.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-ctx.Done():
			s.hardStop()
			s.mu.Lock()
			for c := range s.conns {
				c.nc.Close()
			}
			s.mu.Unlock()
			<-finished
			s.shutdownErr = ctx.Err()
		}
		s.hardStop()
		close(s.done)
	})
	<-s.done
	return s.shutdownErr
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.nconns.Add(-1)
	s.conWG.Done()
}

// Conns returns how many connections are open.
func (s *Server) Conns() int { return int(s.nconns.Load()) }
