package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The conns suite measures what many quiet clients cost the server: the
// server child (the fetch suite's) first with no client, then holding N
// connections that each did an ApiVersions and a Metadata round trip and
// went quiet, then with a long-polling Fetch parked on each, on an idle
// topic. Over a fixed window in each state it takes the child's CPU time
// (getrusage in the child at both ends of the window: a flat server spends
// about none), and after it the child's resident set, live heap and
// goroutines; then it times the child's Shutdown with every client
// connected and parked, and checks that every parked fetch was answered.

// connsPlan is the conns suite's matrix.
type connsPlan struct {
	Conns  int
	Window time.Duration
}

func connsPlanFor(cfg *config) connsPlan {
	p := connsPlan{Conns: int(cfg.scaled(1000, 20)), Window: 10 * time.Second}
	if cfg.Mode == modeQuick {
		p.Window = time.Second
	}
	return p
}

// connsTopic is the idle topic the fetches park on.
const connsTopic = "idle"

func runConns(ctx context.Context, e *env) ([]*table, error) {
	plan := connsPlanFor(e.cfg)
	t := &table{
		Suite:  suiteConns,
		Title:  fmt.Sprintf("many quiet clients: folio serve (child process) over a %v window per state", plan.Window),
		Params: []string{"state", "clients"},
		Columns: []column{
			{"server CPU", "ms/s"}, {"RSS", "MiB"}, {"heap", "MiB"}, {"heap per client", "KiB"},
			{"goroutines", "count"}, {"shutdown", "ms"},
		},
	}
	dir := filepath.Join(e.dir, "conns")
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	if _, err := b.CreateTopic(connsTopic, folio.TopicConfig{Partitions: 4}); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	states := []string{"no clients", "idle connections", "parked fetches"}
	// vals[state][column] holds every run.
	vals := make([][][]float64, len(states))
	for i := range vals {
		vals[i] = make([][]float64, len(t.Columns))
	}
	for r := range e.cfg.Runs {
		if err := ctx.Err(); err != nil {
			return []*table{t}, err
		}
		got, err := connsRun(ctx, e, dir, plan, r)
		if err != nil {
			return []*table{t}, err
		}
		for s := range states {
			for c := range t.Columns {
				vals[s][c] = append(vals[s][c], got[s][c])
			}
		}
	}
	for s, name := range states {
		clients := strconv.Itoa(plan.Conns)
		if s == 0 {
			clients = "0"
		}
		if err := t.add([]string{name, clients}, "n/a", vals[s]); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Each run starts a fresh server child on the same directory (topic %q, 4 partitions, empty). Server CPU is the child's user+system time (getrusage in the child) over the window, per second of window: 0 is a server that sleeps.", connsTopic),
		"Idle connections: each did an ApiVersions (v3) and a Metadata (v12) round trip, then sends nothing. Parked fetches: each connection then sends one Fetch (v12, MaxWaitMs 60000, MinBytes 1) for a partition of the idle topic; the window starts once the child runs a goroutine more per fetch.",
		"RSS is VmRSS of the child; heap is HeapInuse after a collection; heap per client is the rise over the state without clients, divided by the clients. Both are read after the window, outside it.",
		"Shutdown is transport.Server.Shutdown plus the Broker's Close in the child with every client connected and parked; every parked fetch must then receive its (empty) answer, or the run fails.",
	}
	return []*table{t}, nil
}

// connsRun is one run: a fresh child through the three states; it returns
// per state the row's values in column order.
func connsRun(ctx context.Context, e *env, dir string, plan connsPlan, r int) ([3][6]float64, error) {
	var out [3][6]float64
	srv, err := startServer(ctx, serverFolio, dir)
	if err != nil {
		return out, err
	}
	defer srv.stop()
	var base serverReply
	// state measures one window and the resources after it.
	state := func(i int) error {
		u0, err := srv.usage()
		if err != nil {
			return err
		}
		select {
		case <-time.After(plan.Window):
		case <-ctx.Done():
			return ctx.Err()
		}
		u1, err := srv.usage()
		if err != nil {
			return err
		}
		st, err := srv.do("stats")
		if err != nil {
			return err
		}
		if i == 0 {
			base = st
		}
		perClient := nan()
		if i > 0 {
			perClient = (float64(st.HeapInuse) - float64(base.HeapInuse)) / float64(plan.Conns) / 1024
		}
		out[i] = [6]float64{
			float64(u1.sub(u0).cpu().Nanoseconds()) / 1e6 / plan.Window.Seconds(),
			float64(st.RSS) / (1 << 20), float64(st.HeapInuse) / (1 << 20), perClient,
			float64(st.Goroutines), nan(),
		}
		return nil
	}
	e.step(suiteConns, "no clients, run %d/%d", r+1, e.cfg.Runs)
	if err := state(0); err != nil {
		return out, err
	}
	e.step(suiteConns, "%d idle connections, run %d/%d", plan.Conns, r+1, e.cfg.Runs)
	conns, err := dialQuiet(srv.addr, plan.Conns)
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	if err != nil {
		return out, err
	}
	if err := state(1); err != nil {
		return out, err
	}
	g1 := int(out[1][4])
	e.step(suiteConns, "%d parked fetches, run %d/%d", plan.Conns, r+1, e.cfg.Runs)
	for i, nc := range conns {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 12, -1, 60_000, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = connsTopic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = int32(i%4), 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		nc.SetWriteDeadline(time.Now().Add(childTimeout))
		if _, err := nc.Write(requestFrame(f, 3)); err != nil {
			return out, fmt.Errorf("conns: connection %d: send fetch: %w", i, err)
		}
	}
	if _, err := srv.do("wait-goroutines " + strconv.Itoa(g1+plan.Conns)); err != nil {
		return out, fmt.Errorf("conns: fetches did not park: %w", err)
	}
	if err := state(2); err != nil {
		return out, err
	}
	e.step(suiteConns, "shutdown with %d clients parked, run %d/%d", plan.Conns, r+1, e.cfg.Runs)
	rep, err := srv.do("shutdown")
	if err != nil {
		return out, err
	}
	out[2][5] = float64(rep.ShutdownNs) / 1e6
	if err := readAnswers(conns, 3); err != nil {
		return out, err
	}
	return out, nil
}

// dialQuiet opens n connections to addr, each doing an ApiVersions and a
// Metadata round trip, 16 at a time. The connections are returned even
// with an error, for the caller to close.
func dialQuiet(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	const dialers = 16
	for d := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := d; i < n; i += dialers {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					errs[i] = fmt.Errorf("conns: connection %d: %w", i, err)
					return
				}
				conns[i] = nc
				av := kmsg.NewPtrApiVersionsRequest()
				av.Version = 3
				av.ClientSoftwareName, av.ClientSoftwareVersion = "folio-bench", "1"
				md := kmsg.NewPtrMetadataRequest()
				md.Version = 12
				for corr, req := range []kmsg.Request{av, md} {
					if err := roundTrip(nc, req, int32(corr+1)); err != nil {
						errs[i] = fmt.Errorf("conns: connection %d: %s: %w", i, kmsg.NameForKey(req.Key()), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return conns, errors.Join(errs...)
}

// requestFrame is req as a request frame with client id "bench".
func requestFrame(req kmsg.Request, corr int32) []byte {
	out := []byte{0, 0, 0, 0}
	out = binary.BigEndian.AppendUint16(out, uint16(req.Key()))
	out = binary.BigEndian.AppendUint16(out, uint16(req.GetVersion()))
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	out = binary.BigEndian.AppendUint16(out, 5)
	out = append(out, "bench"...)
	if req.IsFlexible() {
		out = append(out, 0) // no header tags
	}
	out = req.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// readFrame reads one response frame and checks its correlation id.
func readFrame(nc net.Conn, corr int32) error {
	nc.SetReadDeadline(time.Now().Add(childTimeout))
	var l [4]byte
	if _, err := io.ReadFull(nc, l[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n < 4 || n > 64<<20 {
		return fmt.Errorf("response frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(nc, b); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		return fmt.Errorf("answer to correlation id %d, want %d", got, corr)
	}
	return nil
}

// roundTrip sends req on nc and reads its answer's frame.
func roundTrip(nc net.Conn, req kmsg.Request, corr int32) error {
	nc.SetWriteDeadline(time.Now().Add(childTimeout))
	if _, err := nc.Write(requestFrame(req, corr)); err != nil {
		return err
	}
	return readFrame(nc, corr)
}

// readAnswers checks that every connection received the answer to request
// corr (the parked fetch, answered at shutdown).
func readAnswers(conns []net.Conn, corr int32) error {
	var errs []error
	for i, nc := range conns {
		if err := readFrame(nc, corr); err != nil {
			errs = append(errs, fmt.Errorf("conns: connection %d: parked fetch not answered: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
