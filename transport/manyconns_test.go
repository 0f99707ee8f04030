package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

// roundTrip sends req on nc and reads the answer's frame, checking its
// correlation id; unlike readResponse it may run off the test goroutine.
func roundTrip(nc net.Conn, req kmsg.Request, corr int32) error {
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(kmsgFrame(req, corr)); err != nil {
		return err
	}
	var l [4]byte
	if _, err := io.ReadFull(nc, l[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		return err
	}
	if len(b) < 4 || int32(binary.BigEndian.Uint32(b)) != corr {
		return fmt.Errorf("answer to correlation id %d: % x", corr, b[:min(len(b), 8)])
	}
	return nil
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestThousandConnections holds 1,000 connections, each having done an
// ApiVersions and a Metadata round trip, reports the goroutines and heap
// each costs (bounded: the reader and the writer, and their buffers), then
// parks a long-polling fetch on each (on an idle topic: one goroutine per
// fetch, none per partition), and shuts down with all of them connected:
// promptly, every fetch answered, every connection closed, no goroutine
// left behind.
func TestThousandConnections(t *testing.T) {
	// About 0.5 s (1.5 s under -race) on 2 cores: not skipped under -short.
	const n = 1000
	// Registered first, so it runs last: after the backend's partitions
	// (and their log goroutines) are closed.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	b := newTestBackend(t)
	b.mustCreate(t, "t", topic.Config{Partitions: 4})
	s, err := NewServer(b, &Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var parked atomic.Int64
	allParked := make(chan struct{})
	onPark := func() {
		if parked.Add(1) == n {
			close(allParked)
		}
	}
	s.onPark.Store(&onPark)
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), l) }()

	g0, h0 := runtime.NumGoroutine(), heapInUse()
	conns := make([]net.Conn, n)
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	const dialers = 16
	for d := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := d; i < n; i += dialers {
				err := func() error {
					nc, err := net.Dial("tcp", l.Addr().String())
					if err != nil {
						return err
					}
					conns[i] = nc
					av := kmsg.NewPtrApiVersionsRequest()
					av.Version = 3
					av.ClientSoftwareName, av.ClientSoftwareVersion = "manyconns", "1"
					if err := roundTrip(nc, av, 1); err != nil {
						return fmt.Errorf("ApiVersions: %w", err)
					}
					md := kmsg.NewPtrMetadataRequest()
					md.Version = 12
					if err := roundTrip(nc, md, 2); err != nil {
						return fmt.Errorf("Metadata: %w", err)
					}
					return nil
				}()
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = fmt.Errorf("connection %d: %w", i, err)
					}
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	if got := s.Conns(); got != n {
		t.Fatalf("the server holds %d connections, want %d", got, n)
	}
	g1, h1 := runtime.NumGoroutine(), heapInUse()
	gPer := float64(g1-g0) / n
	hPer := (float64(h1) - float64(h0)) / n
	t.Logf("%d connections: %.2f goroutines and %.1f KiB of heap each (client sockets included; GOMAXPROCS %d)",
		n, gPer, hPer/1024, runtime.GOMAXPROCS(0))
	if gPer > 2.5 {
		t.Errorf("%.2f goroutines per idle connection, want at most 2 (reader, writer)", gPer)
	}
	if hPer > 96<<10 {
		t.Errorf("%.1f KiB of heap per idle connection, want at most 96 (a 16 KiB read and a 32 KiB write buffer)", hPer/1024)
	}

	// Then a long-polling fetch parks on each, on the idle topic.
	for i, nc := range conns {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 12, 120_000, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = int32(i%4), 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := nc.Write(kmsgFrame(f, 3)); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	select {
	case <-allParked:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d of %d fetches parked after 60 s", parked.Load(), n)
	}
	g2, h2 := runtime.NumGoroutine(), heapInUse()
	t.Logf("%d parked fetches: %.2f more goroutines and %.1f KiB more heap each",
		n, float64(g2-g1)/n, (float64(h2)-float64(h1))/n/1024)
	if per := float64(g2-g1) / n; per > 1.5 {
		t.Errorf("%.2f goroutines per parked fetch, want 1 (its handler; none per partition)", per)
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with %d connections: %v", n, err)
	}
	took := time.Since(start)
	t.Logf("Shutdown with %d connections, each with a parked fetch, took %v", n, took)
	if took > 5*time.Second {
		t.Errorf("Shutdown with %d connections and parked fetches took %v, want under 5 s", n, took)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if got := s.Conns(); got != 0 {
		t.Fatalf("%d connections open after Shutdown", got)
	}
	// Every client gets its fetch answered (empty), then sees its
	// connection end.
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(nc)
		if err != nil {
			t.Fatalf("connection %d not closed by Shutdown: %v", i, err)
		}
		if len(b) < 8 || int32(binary.BigEndian.Uint32(b[4:])) != 3 {
			t.Fatalf("connection %d: the parked fetch was not answered before the close (%d bytes)", i, len(b))
		}
	}
}
