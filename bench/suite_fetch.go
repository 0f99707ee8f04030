package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// The fetch suite measures the Kafka endpoint's Fetch path: `folio serve`'s
// server (package transport) in a child process serving a topic per read
// path, a minimal kmsg fetcher in this process that discards the record
// bytes, and as the baseline a raw loop that sendfiles the same segment
// files into a loopback socket to the same kind of discarding reader. The
// child's CPU (getrusage in the child around the timed pass) is the
// sender's cost per byte.

// fetchServerFlag makes the bench binary the fetch suite's server child:
// it serves the data directory that follows, prints its address, answers
// "usage" lines on stdin with its getrusage as JSON, and exits at EOF.
const fetchServerFlag = "-fetch-server-child"

func fetchServerDir(args []string) (string, bool) {
	if len(args) == 2 && args[0] == fetchServerFlag {
		return args[1], true
	}
	return "", false
}

// fetchServerMain is the child's whole life.
func fetchServerMain(dir string, stdout io.Writer, stdin io.Reader, stderr io.Writer) int {
	if err := fetchServe(dir, stdout, stdin); err != nil {
		fmt.Fprintln(stderr, "bench: fetch server child:", err)
		return exitFail
	}
	return exitOK
}

func fetchServe(dir string, stdout io.Writer, stdin io.Reader) error {
	b, err := folio.Open(dir, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	s, err := transport.NewServer(b, &transport.Options{DisableAutoCreate: true})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), l) }()
	fmt.Fprintln(stdout, l.Addr())
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() != "usage" {
			return fmt.Errorf("unknown command %q", sc.Text())
		}
		u, err := selfUsage()
		if err != nil {
			return err
		}
		line, _ := json.Marshal(u)
		fmt.Fprintf(stdout, "%s\n", line)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, transport.ErrServerClosed) {
		return err
	}
	return b.Close()
}

// fetchServer is the parent's handle on the child.
type fetchServer struct {
	cmd   *exec.Cmd
	addr  string
	in    io.WriteCloser
	out   *bufio.Reader
	ended chan error
}

func startFetchServer(ctx context.Context, dir string) (*fetchServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find own executable: %v", ErrChild, err)
	}
	cmd := exec.CommandContext(ctx, exe, fetchServerFlag, dir)
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
	s := &fetchServer{cmd: cmd, in: in, out: bufio.NewReader(outPipe), ended: make(chan error, 1)}
	line, err := s.out.ReadString('\n')
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%w: fetch server gave no address: %v", ErrChild, err)
	}
	s.addr = strings.TrimSpace(line)
	return s, nil
}

func (s *fetchServer) usage() (usage, error) {
	var u usage
	if _, err := io.WriteString(s.in, "usage\n"); err != nil {
		return u, fmt.Errorf("%w: %v", ErrChild, err)
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return u, fmt.Errorf("%w: fetch server usage: %v", ErrChild, err)
	}
	return u, json.Unmarshal(line, &u)
}

// stop closes the child's stdin (its signal to shut down) and waits.
func (s *fetchServer) stop() error {
	s.in.Close()
	io.Copy(io.Discard, s.out)
	return s.cmd.Wait()
}

// fetchSuitePlan is the fetch suite's matrix.
type fetchSuitePlan struct {
	Bytes    int64 // per topic
	RecSize  int
	MaxBytes int32 // per fetch
}

func fetchSuitePlanFor(cfg *config) fetchSuitePlan {
	p := fetchSuitePlan{RecSize: 1024, MaxBytes: 1 << 20}
	switch cfg.Mode {
	case modeQuick:
		p.Bytes = 16 << 20
	case modeFull:
		p.Bytes = 1 << 30
	default:
		p.Bytes = 256 << 20
	}
	p.Bytes = cfg.scaled(p.Bytes, 1<<20)
	return p
}

var fetchPaths = []string{"sendfile", "mmap"}

func runFetch(ctx context.Context, e *env) ([]*table, error) {
	plan := fetchSuitePlanFor(e.cfg)
	t := &table{
		Suite:  suiteFetch,
		Title:  "Kafka Fetch over loopback: folio serve (child process) to a discarding kmsg fetcher, against a raw sendfile loop",
		Params: []string{"sender", "data", "record"},
		Columns: []column{
			{"throughput", "MiB/s"}, {"of raw", "ratio"}, {"sender CPU", "ns/KiB"},
		},
	}
	dir := filepath.Join(e.dir, "fetch-data")
	e.step(suiteFetch, "writing %s per read path", formatBytes(plan.Bytes))
	if err := writeFetchData(dir, plan); err != nil {
		return nil, err
	}
	srv, err := startFetchServer(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	segs, _ := filepath.Glob(filepath.Join(dir, "f-sendfile-0", "*.log"))
	type cell struct{ mibs, cpu []float64 }
	cells := map[string]*cell{}
	var rawMedian float64
	for r := range e.cfg.Runs {
		// Warm every file first: the figures are warm-cache figures.
		if _, err := prepareCache(warmCache, segs); err != nil {
			return nil, err
		}
		e.step(suiteFetch, "raw sendfile loop, run %d/%d", r+1, e.cfg.Runs)
		n, took, err := rawSendfile(segs)
		if err != nil {
			return nil, fmt.Errorf("raw sendfile: %w", err)
		}
		c := cells["raw"]
		if c == nil {
			c = &cell{}
			cells["raw"] = c
		}
		c.mibs = append(c.mibs, float64(n)/took.Seconds()/(1<<20))
		for _, p := range fetchPaths {
			if err := ctx.Err(); err != nil {
				return []*table{t}, err
			}
			e.step(suiteFetch, "fetch, read.path=%s, run %d/%d", p, r+1, e.cfg.Runs)
			if r == 0 { // untimed warm-up pass through the server
				if _, err := fetchAll(srv.addr, "f-"+p, plan.MaxBytes); err != nil {
					return nil, fmt.Errorf("fetch %s: %w", p, err)
				}
			}
			u0, err := srv.usage()
			if err != nil {
				return nil, err
			}
			start := time.Now()
			n, err := fetchAll(srv.addr, "f-"+p, plan.MaxBytes)
			took := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("fetch %s: %w", p, err)
			}
			u1, err := srv.usage()
			if err != nil {
				return nil, err
			}
			d := u1.sub(u0)
			c := cells[p]
			if c == nil {
				c = &cell{}
				cells[p] = c
			}
			c.mibs = append(c.mibs, float64(n)/took.Seconds()/(1<<20))
			c.cpu = append(c.cpu, float64((d.User+d.Sys).Nanoseconds())/(float64(n)/1024))
		}
	}
	rawMedian = summarize(cells["raw"].mibs).Median
	for _, p := range append([]string{"raw"}, fetchPaths...) {
		c := cells[p]
		ratios := make([]float64, len(c.mibs))
		for i, v := range c.mibs {
			ratios[i] = v / rawMedian
		}
		name := "folio serve, read.path=" + p
		cpu := c.cpu
		if p == "raw" {
			name, cpu = "raw sendfile loop", nil
		}
		if err := t.add([]string{name, formatBytes(plan.Bytes), formatBytes(int64(plan.RecSize))}, "warm", [][]float64{c.mibs, ratios, cpu}); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Each fetch asks for %s (MaxBytes and partition MaxBytes) at the next offset; the fetcher reads each response into a reused buffer, parses the frame with kmsg and the last batch header for the next offset, and drops the bytes. One connection, one partition, 64-record batches.", formatBytes(int64(plan.MaxBytes))),
		"The raw loop sendfiles the sendfile topic's segment files into a loopback TCP socket in 1 MiB calls, to a goroutine that reads and drops them: the ceiling the server's framing and read path are compared with (\"of raw\": the run's throughput over the raw loop's median).",
		"Sender CPU is the server child's user+system time (getrusage in the child) across the timed pass, per KiB fetched; the raw loop runs in this process beside its reader, so it has none.",
	}
	return []*table{t}, nil
}

// writeFetchData writes plan.Bytes of records to a topic per read path.
func writeFetchData(dir string, plan fetchSuitePlan) error {
	b, err := folio.Open(dir, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	value := make([]byte, plan.RecSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	for _, p := range fetchPaths {
		var cfg folio.TopicConfig
		if err := cfg.Set("read.path", p); err != nil {
			return err
		}
		cfg.Partitions, cfg.Flush = 1, folio.FlushNone
		name := "f-" + p
		if _, err := b.CreateTopic(name, cfg); err != nil {
			return err
		}
		var written int64
		for written < plan.Bytes {
			bld, err := record.NewBuilder(nil)
			if err != nil {
				return err
			}
			for range 64 {
				if err := bld.Append(record.Record{Value: value, Timestamp: time.Now().UnixMilli()}); err != nil {
					return err
				}
			}
			batch, err := bld.Build(nil)
			if err != nil {
				return err
			}
			if _, err := b.AppendBatch(context.Background(), name, 0, batch); err != nil {
				return err
			}
			written += int64(len(batch))
		}
		if err := b.Sync(name, 0); err != nil {
			return err
		}
	}
	return b.Close()
}

// fetchAll fetches the whole partition 0 of topic from offset 0 to the
// high watermark and returns the record bytes received.
func fetchAll(addr, topic string, maxBytes int32) (int64, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64<<10)
	var (
		offset, total int64
		buf, out      []byte
	)
	for corr := int32(0); ; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, -1, 0, 1, maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		out = out[:0]
		out = append(out, 0, 0, 0, 0)
		out = binary.BigEndian.AppendUint16(out, uint16(req.Key()))
		out = binary.BigEndian.AppendUint16(out, uint16(req.Version))
		out = binary.BigEndian.AppendUint32(out, uint32(corr))
		out = binary.BigEndian.AppendUint16(out, 5)
		out = append(out, "bench"...)
		out = req.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return total, err
		}
		var l [4]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return total, err
		}
		n := int(binary.BigEndian.Uint32(l[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return total, err
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = req.Version
		if err := resp.UnsafeReadFrom(buf[4:]); err != nil {
			return total, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return total, errors.New("fetch response without the partition")
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return total, fmt.Errorf("fetch error code %d", p.ErrorCode)
		}
		recs := p.RecordBatches
		total += int64(len(recs))
		for len(recs) > 0 {
			b, rest, err := record.Parse(recs)
			if err != nil {
				return total, err
			}
			offset, recs = b.LastOffset()+1, rest
		}
		if offset >= p.HighWatermark {
			return total, nil
		}
	}
}

// rawSendfile sends every file into a loopback socket with sendfile, to a
// goroutine that reads and drops the bytes.
func rawSendfile(files []string) (int64, time.Duration, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, make([]byte, 64<<10))
		got <- err
	}()
	conn, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return 0, 0, err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return 0, 0, err
	}
	var total int64
	start := time.Now()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			conn.Close()
			return total, 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			conn.Close()
			return total, 0, err
		}
		var off int64
		var serr error
		werr := raw.Write(func(fd uintptr) bool {
			for off < st.Size() {
				n, err := unix.Sendfile(int(fd), int(f.Fd()), &off, int(min(st.Size()-off, 1<<20)))
				if errors.Is(err, unix.EAGAIN) {
					return false // wait until writable
				}
				if err != nil {
					serr = err
					return true
				}
				total += int64(n)
			}
			return true
		})
		f.Close()
		if err := errors.Join(werr, serr); err != nil {
			conn.Close()
			return total, 0, err
		}
	}
	conn.CloseWrite()
	err = <-got
	took := time.Since(start)
	conn.Close()
	return total, took, err
}
