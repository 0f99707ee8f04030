package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The wire suites (fetch, wire-produce, wire-latency, conns) talk to a
// Kafka server in a child process, so that the server's CPU, memory and
// goroutines are its own. The child is this same binary re-executed with a
// flag the usage text does not list, followed by the kind of server and its
// data directory. It prints its address on the first line of stdout, then
// answers one JSON line (serverReply) per command line on stdin, and shuts
// down and exits at EOF.
//
// It is this binary rather than `folio serve` so that the parent can ask it
// for its getrusage, heap and goroutines at the edges of a measured window;
// it runs the same transport.Server over the same folio.Broker as `folio
// serve` does. startServer is the one place that starts it.
const serverChildFlag = "-server-child"

// Kinds of server child.
const (
	serverFolio     = "folio"      // transport over folio.Broker
	serverFolioCopy = "folio-copy" // the same through connections that hide the TCP socket: every record set read with pread and written
	serverKfake     = "kfake"      // franz-go's kfake, persisting to the directory
	serverKfakeSync = "kfake-sync" // the same with kfake.SyncWrites (an fsync per batch)
)

// serverChildArgs reports whether args ask for the server child role.
func serverChildArgs(args []string) (kind, dir string, ok bool) {
	if len(args) == 3 && args[0] == serverChildFlag {
		switch args[1] {
		case serverFolio, serverFolioCopy, serverKfake, serverKfakeSync:
			return args[1], args[2], true
		}
	}
	return "", "", false
}

// serverReply is the child's answer to one command.
type serverReply struct {
	Usage      usage  `json:"usage"`      // getrusage(RUSAGE_SELF) now
	Goroutines int    `json:"goroutines"` // runtime.NumGoroutine
	HeapInuse  uint64 `json:"heap_inuse"` // after a collection; "stats" only
	RSS        int64  `json:"rss"`        // VmRSS in bytes; "stats" only
	ShutdownNs int64  `json:"shutdown_ns,omitempty"`
	Err        string `json:"err,omitempty"`
}

// serverChildMain is the child's whole life.
func serverChildMain(kind, dir string, stdout io.Writer, stdin io.Reader, stderr io.Writer) int {
	if err := serveChildServer(kind, dir, stdout, stdin); err != nil {
		fmt.Fprintln(stderr, "bench: server child:", err)
		return exitFail
	}
	return exitOK
}

// childServer is what the child serves: its address and how it stops.
type childServer struct {
	addr     string
	shutdown func() error
}

func startChildServer(kind, dir string) (*childServer, error) {
	if kind != serverFolio && kind != serverFolioCopy {
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(dir), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4)}
		if kind == serverKfakeSync {
			opts = append(opts, kfake.SyncWrites())
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			return nil, err
		}
		return &childServer{addr: c.ListenAddrs()[0], shutdown: func() error { c.Close(); return nil }}, nil
	}
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	s, err := transport.NewServer(b, &transport.Options{DisableAutoCreate: true})
	if err != nil {
		b.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Close()
		return nil, err
	}
	if kind == serverFolioCopy {
		l = socketHider{l}
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), l) }()
	return &childServer{addr: l.Addr().String(), shutdown: func() error {
		err := s.Shutdown(context.Background())
		if serr := <-served; !errors.Is(serr, transport.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return errors.Join(err, b.Close())
	}}, nil
}

func serveChildServer(kind, dir string, stdout io.Writer, stdin io.Reader) error {
	srv, err := startChildServer(kind, dir)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, srv.addr)
	stopped := false
	var prof *os.File
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		var rep serverReply
		var err error
		switch cmd {
		case "usage":
		case "stats":
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			rep.HeapInuse = ms.HeapInuse
			rep.RSS, err = selfRSS()
		case "wait-goroutines":
			err = waitGoroutines(arg)
		case "profile":
			if prof == nil {
				if prof, err = os.Create(arg); err == nil {
					err = pprof.StartCPUProfile(prof)
				}
			}
		case "profile-stop":
			if prof != nil {
				pprof.StopCPUProfile()
				err = prof.Close()
				prof = nil
			}
		case "shutdown":
			start := time.Now()
			err = srv.shutdown()
			rep.ShutdownNs = max(time.Since(start).Nanoseconds(), 1)
			stopped = true
		default:
			return fmt.Errorf("unknown command %q", sc.Text())
		}
		if err != nil {
			rep.Err = err.Error()
		}
		rep.Goroutines = runtime.NumGoroutine()
		u, uerr := selfUsage()
		if uerr != nil {
			return uerr
		}
		rep.Usage = u
		line, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", line)
	}
	if stopped {
		return nil
	}
	return srv.shutdown()
}

// waitGoroutines waits until the process runs at least arg goroutines: how
// the parent learns that the fetches it sent are parked (each parked fetch
// is one goroutine of the server's), without a hook into the server. It
// looks every 10 ms, outside any measured window.
func waitGoroutines(arg string) error {
	want, err := strconv.Atoi(arg)
	if err != nil {
		return fmt.Errorf("wait-goroutines %q: %v", arg, err)
	}
	deadline := time.Now().Add(childTimeout)
	for runtime.NumGoroutine() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d goroutines after %v, want %d", runtime.NumGoroutine(), childTimeout, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// serverProc is the parent's handle on the server child.
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	in   io.WriteCloser
	out  *bufio.Reader
}

// startServer starts the server child of the given kind on dir: the one
// place that does, so that it can be pointed at another program.
func startServer(ctx context.Context, kind, dir string) (*serverProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %v", ErrChild, err)
	}
	cmd := exec.CommandContext(ctx, exe, serverChildFlag, kind, dir)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %v", ErrChild, exe, err)
	}
	s := &serverProc{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	line, err := s.out.ReadString('\n')
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%w: %s server gave no address: %v", ErrChild, kind, err)
	}
	s.addr = strings.TrimSpace(line)
	return s, nil
}

// do sends one command and returns the child's reply.
func (s *serverProc) do(cmd string) (serverReply, error) {
	var rep serverReply
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		return rep, fmt.Errorf("%w: %s: %v", ErrChild, cmd, err)
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("%w: %s: %v", ErrChild, cmd, err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("%w: %s: decode %q: %v", ErrChild, cmd, line, err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("%w: %s: %s", ErrChild, cmd, rep.Err)
	}
	return rep, nil
}

// usage is the child's getrusage now.
func (s *serverProc) usage() (usage, error) {
	rep, err := s.do("usage")
	return rep.Usage, err
}

// stop closes the child's stdin (its signal to shut down) and waits.
func (s *serverProc) stop() error {
	s.in.Close()
	io.Copy(io.Discard, s.out)
	return s.cmd.Wait()
}

// socketHider hands out connections that are not a *net.TCPConn, so that a
// Sendfile view cannot sendfile into them nor a Fetch response go in one
// writev: each record set is read with pread into a buffer and written,
// the copying path a TLS connection takes, for the fetch suite's third
// read path.
type socketHider struct{ net.Listener }

func (h socketHider) Accept() (net.Conn, error) {
	c, err := h.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return hiddenConn{c}, nil
}

type hiddenConn struct{ net.Conn }
