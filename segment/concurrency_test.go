package segment

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// TestLookupsAgreeWithLinearScan is the property test: on random segments
// (random batch sizes, offset gaps, out-of-order timestamps, index
// intervals) every offset and time lookup agrees with a linear scan, while
// active, after Seal, and after a reopen.
func TestLookupsAgreeWithLinearScan(t *testing.T) {
	rng := testRand(t)
	for trial := range 25 {
		dir := segDir(t)
		opts := &Options{ReadPath: readpath.Kind(trial % 2)}
		switch trial % 3 {
		case 0:
			opts.IndexIntervalBytes = 1
		case 1:
			opts.IndexIntervalBytes = 64 + rng.Intn(2000)
		}
		base := rng.Int63n(1 << 40)
		s := mustCreate(t, dir, base, opts)
		m := &model{base: base}
		fill(t, s, m, newGen(t, rng, base), 1+rng.Intn(150))
		checkAgainst(t, s, m)
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, s, m)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		r := mustOpen(t, dir, base, opts)
		checkAgainst(t, r, m)
		if n := r.IndexRebuilds(); n != 0 {
			t.Fatalf("trial %d: clean reopen rebuilt %d times", trial, n)
		}
	}
}

func TestReadPathsGiveIdenticalBytes(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 150)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mm := mustOpen(t, dir, 0, &Options{ReadPath: readpath.Mmap})
	sf := mustOpen(t, dir, 0, &Options{ReadPath: readpath.Sendfile})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	for range 300 {
		off := rng.Int63n(m.next() + 2)
		maxBytes := rng.Intn(40000)
		maxPos := int64(-1)
		if rng.Intn(4) == 0 {
			maxPos = rng.Int63n(m.size())
		}
		want := m.read(off, maxBytes, maxPos)
		var got [][]byte
		for _, s := range []*Segment{mm, sf} {
			v, err := s.Read(off, maxBytes, maxPos)
			if want == nil {
				if err == nil {
					v.Release()
					t.Fatalf("%v: Read(%d, %d, %d) succeeded, want ErrOffsetOutOfRange", s.opts.ReadPath, off, maxBytes, maxPos)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := v.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			// To a TCP socket: positional sendfile for the sendfile path,
			// a write from the mapping for mmap.
			done := make(chan []byte)
			go func(n int) {
				b := make([]byte, n)
				_, err := io.ReadFull(server, b)
				if err != nil {
					b = nil
				}
				done <- b
			}(v.Len())
			if _, err := v.WriteTo(client); err != nil {
				t.Fatal(err)
			}
			sock := <-done
			got = append(got, viewBytes(t, v), buf.Bytes(), sock)
		}
		for i, g := range got {
			if !bytes.Equal(g, want) {
				t.Fatalf("Read(%d, %d, %d): output %d (path %d: Bytes, WriteTo buffer, WriteTo TCP) differs", off, maxBytes, maxPos, i, i/3)
			}
		}
	}
}

// TestConcurrentAppendAndRead runs one appender, a syncer and several
// readers at once (run it with -race): every read sees whole, correct
// batches of what was published, never beyond.
func TestConcurrentAppendAndRead(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := testRand(t)
			dir := segDir(t)
			s := mustCreate(t, dir, 0, &Options{ReadPath: kind, IndexIntervalBytes: 700})
			all := &model{}
			g := newGen(t, rng, 0)
			var batches []record.Batch
			for range 600 {
				b := g.batch()
				batches = append(batches, b)
				all.add(b)
			}
			var done atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer done.Store(true)
				for _, b := range batches {
					if _, err := s.Append(b); err != nil {
						t.Errorf("Append: %v", err)
						return
					}
				}
			}()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done.Load() {
					if err := s.Sync(); err != nil {
						t.Errorf("Sync: %v", err)
						return
					}
				}
			}()
			for r := range 3 {
				rr := rand.New(rand.NewSource(rng.Int63()))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; !done.Load() || n < 50; n++ {
						if !concurrentRead(t, s, all, rr, r) {
							return
						}
					}
				}()
			}
			wg.Wait()
			checkAgainst(t, s, all)
			if n := s.IndexRebuilds(); n != 0 {
				t.Fatalf("concurrent readers rebuilt the indexes %d times", n)
			}
		})
	}
}

// concurrentRead does one random lookup against a segment being appended
// to and checks it against the full model; it reports false on failure.
func concurrentRead(t *testing.T, s *Segment, all *model, rr *rand.Rand, r int) bool {
	next, err := s.NextOffset()
	if err != nil {
		t.Errorf("NextOffset: %v", err)
		return false
	}
	if next == 0 {
		return true
	}
	off := rr.Int63n(next)
	i := all.find(off)
	switch r {
	case 0:
		v, err := s.Read(off, rr.Intn(20000), -1)
		if err != nil {
			t.Errorf("Read(%d) below next %d: %v", off, next, err)
			return false
		}
		got := viewBytes(t, v)
		first := all.batches[i]
		if v.Pos() != first.pos || !bytes.Equal(got, all.read(off, len(got), first.pos+int64(len(got)))) {
			t.Errorf("Read(%d): %d bytes at %d are not whole published batches", off, len(got), v.Pos())
			return false
		}
	case 1:
		pos, err := s.FindPosition(off)
		if err != nil || pos != all.batches[i].pos {
			t.Errorf("FindPosition(%d) = %d, %v; want %d", off, pos, err, all.batches[i].pos)
			return false
		}
	case 2:
		ts := all.batches[rr.Intn(len(all.batches))].h().MaxTimestamp() + int64(rr.Intn(3)-1)
		got, ok, err := s.OffsetForTime(ts)
		want, wok := all.offsetForTime(ts)
		switch {
		case err != nil:
			t.Errorf("OffsetForTime(%d): %v", ts, err)
			return false
		case ok && (!wok || got != want):
			t.Errorf("OffsetForTime(%d) = %d, want %d, %v", ts, got, want, wok)
			return false
		case !ok && wok && want < next:
			t.Errorf("OffsetForTime(%d) found nothing; %d was published", ts, want)
			return false
		}
	}
	return true
}

// TestConcurrentLazyLoadAndCloseIdle has readers load a sealed segment
// while another goroutine keeps giving its files back.
func TestConcurrentLazyLoadAndCloseIdle(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	fill(t, s, m, newGen(t, rng, 0), 100)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := s.CloseIdle(); err != nil {
				t.Errorf("CloseIdle: %v", err)
				return
			}
		}
	}()
	for r := range 3 {
		rr := rand.New(rand.NewSource(rng.Int63()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				if !concurrentRead(t, s, m, rr, r) {
					return
				}
			}
		}()
	}
	for range 300 {
		if !concurrentRead(t, s, m, rng, 0) {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	if n := s.IndexRebuilds(); n != 0 {
		t.Fatalf("%d rebuilds", n)
	}
}
