package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kgo"
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

// fetchSuitePlan is the fetch suite's matrix.
type fetchSuitePlan struct {
	Bytes    int64   // per topic
	RecSize  int     // value bytes per record
	MaxBytes []int32 // per fetch (request and partition MaxBytes), one row each
}

func fetchSuitePlanFor(cfg *config) fetchSuitePlan {
	p := fetchSuitePlan{RecSize: 1024, MaxBytes: []int32{1 << 20, 8 << 20}}
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

// kgoFetchBytes is what the kgo consumer asks for per fetch and per
// partition: the kmsg fetcher's first size, so the two rows compare.
const kgoFetchBytes = 1 << 20

func runFetch(ctx context.Context, e *env) ([]*table, error) {
	plan := fetchSuitePlanFor(e.cfg)
	t := &table{
		Suite:  suiteFetch,
		Title:  "Kafka Fetch over loopback: folio serve (child process) to a discarding kmsg fetcher and to a kgo consumer, against a raw sendfile loop",
		Params: []string{"reader", "read path", "fetch", "data"},
		Columns: []column{
			{"throughput", "MiB/s"}, {"records", "M/s"}, {"of raw", "ratio"}, {"sender CPU", "ns/KiB"},
		},
	}
	dir := filepath.Join(e.dir, "fetch-data")
	e.step(suiteFetch, "writing %s per read path", formatBytes(plan.Bytes))
	data, err := writeFetchData(dir, plan)
	if err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, serverFolio, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if srv != nil {
			srv.stop()
		}
	}()
	segs, _ := filepath.Glob(filepath.Join(dir, "f-sendfile-0", "*.log"))
	type cell struct {
		params         []string
		mibs, mrs, cpu []float64
	}
	var order []string
	cells := map[string]*cell{}
	record := func(key string, params []string, n, recs int64, took time.Duration, d *usage) {
		c := cells[key]
		if c == nil {
			c = &cell{params: params}
			cells[key] = c
			order = append(order, key)
		}
		c.mibs = append(c.mibs, float64(n)/took.Seconds()/(1<<20))
		c.mrs = append(c.mrs, float64(recs)/took.Seconds()/1e6)
		if d == nil {
			c.cpu = append(c.cpu, nan())
			return
		}
		c.cpu = append(c.cpu, float64(d.cpu().Nanoseconds())/(float64(n)/1024))
	}
	// measure runs pass with the server's getrusage around it.
	measure := func(pass func() (int64, error)) (int64, time.Duration, usage, error) {
		u0, err := srv.usage()
		if err != nil {
			return 0, 0, usage{}, err
		}
		start := time.Now()
		n, err := pass()
		took := time.Since(start)
		if err != nil {
			return n, took, usage{}, err
		}
		u1, err := srv.usage()
		return n, took, u1.sub(u0), err
	}
	// readPathPasses measures read path p's cells (the kmsg fetcher at
	// each fetch size, the kgo consumer) in run r against srv. The pread
	// path reads the sendfile topic through a child that hides the socket.
	readPathPasses := func(p string, srv *serverProc, r int) error {
		topic := "f-" + p
		if p == "pread" {
			topic = "f-sendfile"
		}
		for _, mb := range plan.MaxBytes {
			if err := ctx.Err(); err != nil {
				return err
			}
			e.step(suiteFetch, "kmsg fetcher, read.path=%s, %s fetches, run %d/%d", p, formatBytes(int64(mb)), r+1, e.cfg.Runs)
			if r == 0 { // untimed warm-up pass, profiled when asked
				if err := profiledPass(srv, e.cfg.ServerProfile, fmt.Sprintf("fetch-%s-%s", p, formatBytes(int64(mb))), func() error {
					_, err := fetchAll(srv.addr, topic, mb)
					return err
				}); err != nil {
					return fmt.Errorf("fetch %s: %w", p, err)
				}
			}
			n, took, d, err := measure(func() (int64, error) { return fetchAll(srv.addr, topic, mb) })
			if err != nil {
				return fmt.Errorf("fetch %s: %w", p, err)
			}
			if n != data[topic].Bytes {
				return fmt.Errorf("%w: fetched %d bytes of %s, wrote %d", ErrMismatch, n, topic, data[topic].Bytes)
			}
			record("kmsg-"+p+strconv.Itoa(int(mb)), []string{"kmsg fetcher", p, formatBytes(int64(mb)), formatBytes(plan.Bytes)}, n, data[topic].Records, took, &d)
		}
		e.step(suiteFetch, "kgo consumer, read.path=%s, run %d/%d", p, r+1, e.cfg.Runs)
		n, took, d, err := measure(func() (int64, error) { return kgoConsumeAll(ctx, srv.addr, topic, data[topic]) })
		if err != nil {
			return fmt.Errorf("kgo consume %s: %w", p, err)
		}
		record("kgo-"+p, []string{"kgo consumer", p, formatBytes(kgoFetchBytes), formatBytes(plan.Bytes)}, n, data[topic].Records, took, &d)
		return nil
	}
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
		record("raw", []string{"raw sendfile loop", "sendfile(2)", "1 MiB calls", formatBytes(plan.Bytes)}, n, data["f-sendfile"].Records, took, nil)
		for _, p := range fetchPaths {
			if err := readPathPasses(p, srv, r); err != nil {
				return []*table{t}, err
			}
		}
	}
	// The copying path: the sendfile topic served by a child whose
	// connections hide the socket, after the other paths' runs (one child
	// holds the directory at a time).
	err = srv.stop()
	srv = nil
	if err != nil {
		return []*table{t}, err
	}
	if srv, err = startServer(ctx, serverFolioCopy, dir); err != nil {
		return []*table{t}, err
	}
	for r := range e.cfg.Runs {
		if _, err := prepareCache(warmCache, segs); err != nil {
			return nil, err
		}
		if err := readPathPasses("pread", srv, r); err != nil {
			return []*table{t}, err
		}
	}
	rawMedian := summarize(cells["raw"].mibs).Median
	for _, key := range order {
		c := cells[key]
		ratios := make([]float64, len(c.mibs))
		for i, v := range c.mibs {
			ratios[i] = v / rawMedian
		}
		if err := t.add(c.params, "warm", [][]float64{c.mibs, c.mrs, ratios, c.cpu}); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("%d records of %s values in 64-record batches per topic (one partition); about %s of batches, which is what the throughput and CPU columns count for every reader.", data["f-sendfile"].Records, formatBytes(int64(plan.RecSize)), formatBytes(data["f-sendfile"].Bytes)),
		"kmsg fetcher: one connection, Fetch v11 for the fetch size (MaxBytes and partition MaxBytes) at the next offset; it reads each response into a reused buffer, parses the frame with kmsg and the batch headers for the next offset, and drops the bytes. kgo consumer: a franz-go client consuming the partition from offset 0 with FetchMaxBytes and FetchMaxPartitionBytes at " + formatBytes(kgoFetchBytes) + ", decoding every record, until it holds them all (timed from the first poll).",
		"Read paths: sendfile and mmap are the topics' read.path; pread is the sendfile topic served by a second child whose connections hide the TCP socket, so that each record set is read with pread into a buffer and written (the copying path TLS takes), measured after the other paths' runs.",
		"The raw loop sendfiles the sendfile topic's segment files into a loopback TCP socket in 1 MiB calls, to a goroutine that reads and drops them: the ceiling the server's framing and read path are compared with (\"of raw\": the run's throughput over the raw loop's median).",
		"Sender CPU is the server child's user+system time (getrusage in the child) across the timed pass, per KiB fetched; the raw loop runs in this process beside its reader, so it has none. On loopback the sender's system time includes the TCP receive processing of the bytes it sends.",
		"Socket buffers are the kernel's autotuned ones: " + tcpBufferSysctls() + ".",
	}
	return []*table{t}, nil
}

// profiledPass runs pass, with the server child's CPU profile written to
// dir/name.pprof around it when dir is set.
func profiledPass(srv *serverProc, dir, name string, pass func() error) error {
	if dir == "" {
		return pass()
	}
	if _, err := srv.do("profile " + filepath.Join(dir, name+".pprof")); err != nil {
		return err
	}
	err := pass()
	_, serr := srv.do("profile-stop")
	return errors.Join(err, serr)
}

// tcpBufferSysctls names the kernel's TCP buffer bounds, for the notes.
func tcpBufferSysctls() string {
	var parts []string
	for _, name := range []string{"tcp_wmem", "tcp_rmem"} {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("net.ipv4.%s = %s (min, default, max bytes)", name, strings.Join(strings.Fields(string(b)), " ")))
	}
	if len(parts) == 0 {
		return "their bounds are unknown here"
	}
	return strings.Join(parts, ", ")
}

// fetchData is what writeFetchData wrote to each topic.
type fetchData struct {
	Records int64 // per topic
	Bytes   int64 // batch bytes per topic
}

// kgoConsumeAll consumes partition 0 of topic with a kgo client from offset
// 0 until it holds every record written, and returns the batch bytes that
// stands for.
func kgoConsumeAll(ctx context.Context, addr, topic string, data fetchData) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(kgoFetchBytes), kgo.FetchMaxPartitionBytes(kgoFetchBytes))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var got, next int64
	for got < data.Records {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, err
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next && bad == nil {
				bad = fmt.Errorf("%w: kgo got offset %d, want %d", ErrMismatch, r.Offset, next)
			}
			next = r.Offset + 1
			got++
		})
		if bad != nil {
			return 0, bad
		}
	}
	return data.Bytes, nil
}

// writeFetchData writes plan.Bytes of records to a topic per read path
// and returns what each topic holds.
func writeFetchData(dir string, plan fetchSuitePlan) (map[string]fetchData, error) {
	data := map[string]fetchData{}
	b, err := folio.Open(dir, nil)
	if err != nil {
		return data, err
	}
	defer b.Close()
	value := make([]byte, plan.RecSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	for _, p := range fetchPaths {
		var cfg folio.TopicConfig
		if err := cfg.Set("read.path", p); err != nil {
			return data, err
		}
		cfg.Partitions, cfg.Flush = 1, folio.FlushNone
		name := "f-" + p
		if _, err := b.CreateTopic(name, cfg); err != nil {
			return data, err
		}
		var written, records int64
		for written < plan.Bytes {
			bld, err := record.NewBuilder(nil)
			if err != nil {
				return data, err
			}
			for range 64 {
				if err := bld.Append(record.Record{Value: value, Timestamp: time.Now().UnixMilli()}); err != nil {
					return data, err
				}
			}
			batch, err := bld.Build(nil)
			if err != nil {
				return data, err
			}
			if _, err := b.AppendBatch(context.Background(), name, 0, batch); err != nil {
				return data, err
			}
			written += int64(len(batch))
			records += 64
		}
		data[name] = fetchData{Records: records, Bytes: written}
		if err := b.Sync(name, 0); err != nil {
			return data, err
		}
	}
	return data, b.Close()
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
