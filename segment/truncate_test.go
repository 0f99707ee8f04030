package segment

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

func TestTruncateTo(t *testing.T) {
	rng := testRand(t)
	for trial := range 30 {
		dir := segDir(t)
		opts := &Options{IndexIntervalBytes: 1 + rng.Intn(3000)}
		const base = 10
		s := mustCreate(t, dir, base, opts)
		m := &model{base: base}
		g := newGen(t, rng, base)
		fill(t, s, m, g, 20+rng.Intn(60))
		if trial%3 == 0 {
			if err := s.Seal(); err != nil {
				t.Fatal(err)
			}
		}
		var offset int64
		switch trial % 5 {
		case 0:
			offset = base - rng.Int63n(3) // everything
		case 1:
			offset = m.next() + rng.Int63n(3) // nothing
		default:
			offset = base + rng.Int63n(m.next()-base)
		}
		oldSize := m.size()
		m.truncate(offset)
		cut, err := s.TruncateTo(offset)
		if err != nil {
			t.Fatal(err)
		}
		if cut != oldSize-m.size() {
			t.Fatalf("TruncateTo(%d) cut %d bytes, want %d", offset, cut, oldSize-m.size())
		}
		if s.Sealed() {
			t.Fatal("sealed after TruncateTo")
		}
		if fi, err := os.Stat(LogPath(dir, base)); err != nil || fi.Size() != m.size() {
			t.Fatalf(".log size after TruncateTo: %v, %v; want %d", fi.Size(), err, m.size())
		}
		checkAgainst(t, s, m)
		g.next = m.next() + rng.Int63n(3)
		fill(t, s, m, g, 1+rng.Intn(40))
		checkAgainst(t, s, m)
		if n := s.IndexRebuilds(); n != 0 {
			t.Fatalf("truncation needed %d index rebuilds", n)
		}
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		// The offset index continues the rule exactly; time entries kept
		// by the truncation are true statements about the prefix.
		gotOff, gotTime := readIndexFiles(t, dir, base)
		wantOff, _ := m.ruleEntries(opts.IndexIntervalBytes, true)
		if !equalEntries(gotOff, wantOff) {
			t.Fatalf("offset index after truncation:\n%v\nwant\n%v", gotOff, wantOff)
		}
		checkTimeEntriesTrue(t, m, gotTime)
	}
}

// checkTimeEntriesTrue checks what every time entry must say: timestamps
// rise, and (T, O) names the first batch whose max timestamp is T, with
// every earlier batch below T.
func checkTimeEntriesTrue(t testing.TB, m *model, entries []index.TimeEntry) {
	t.Helper()
	for k, e := range entries {
		if k > 0 && e.Timestamp <= entries[k-1].Timestamp {
			t.Fatalf("time entries not rising: %v", entries)
		}
		i := m.find(e.Offset)
		if i < 0 || m.batches[i].h().LastOffset() != e.Offset || m.batches[i].h().MaxTimestamp() != e.Timestamp {
			t.Fatalf("time entry %v names no batch holding its maximum", e)
		}
		for _, b := range m.batches[:i] {
			if b.h().MaxTimestamp() >= e.Timestamp {
				t.Fatalf("time entry %v: an earlier batch reaches %d", e, b.h().MaxTimestamp())
			}
		}
	}
}

func TestTruncateWithViewsOutstanding(t *testing.T) {
	for _, kind := range []readpath.Kind{readpath.Mmap, readpath.Sendfile} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := testRand(t)
			dir := segDir(t)
			s := mustCreate(t, dir, 0, &Options{ReadPath: kind})
			m := &model{}
			g := newGen(t, rng, 0)
			fill(t, s, m, g, 60)

			// No view outstanding: truncation in place keeps the inode.
			before, _ := os.Stat(LogPath(dir, 0))
			off := m.batches[50].h().BaseOffset()
			if _, err := s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			m.truncate(off)
			after, _ := os.Stat(LogPath(dir, 0))
			if !os.SameFile(before, after) {
				t.Fatal("truncation without views replaced the file")
			}

			// A view of bytes that a truncation removes keeps them.
			tail := m.batches[30]
			v, err := s.Read(tail.h().BaseOffset(), math.MaxInt32, -1)
			if err != nil {
				t.Fatal(err)
			}
			want := m.read(tail.h().BaseOffset(), math.MaxInt32, -1)
			off = m.batches[20].h().BaseOffset()
			if _, err := s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			m.truncate(off)
			replaced, _ := os.Stat(LogPath(dir, 0))
			if os.SameFile(after, replaced) {
				t.Fatal("truncation under a view truncated the file in place")
			}
			if _, err := os.Stat(LogPath(dir, 0) + TruncateSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the truncation copy was left behind: %v", err)
			}
			// New batches land where the old ones were.
			g.next = m.next()
			fill(t, s, m, g, 30)
			checkAgainst(t, s, m)
			var buf bytes.Buffer
			if _, err := v.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			if got := viewBytes(t, v); !bytes.Equal(got, want) || !bytes.Equal(buf.Bytes(), want) {
				t.Fatal("a view held across TruncateTo changed")
			}
			// With that view released the next truncation is in place again.
			before, _ = os.Stat(LogPath(dir, 0))
			off = m.batches[10].h().BaseOffset()
			if _, err := s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			m.truncate(off)
			after, _ = os.Stat(LogPath(dir, 0))
			if !os.SameFile(before, after) {
				t.Fatal("truncation after the view's release replaced the file")
			}
			checkAgainst(t, s, m)
		})
	}
}

func TestTruncateReactivatesOpenedSegment(t *testing.T) {
	rng := testRand(t)
	dir := segDir(t)
	s := mustCreate(t, dir, 0, nil)
	m := &model{}
	g := newGen(t, rng, 0)
	fill(t, s, m, g, 40)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, dir, 0, nil)
	off := m.batches[25].h().BaseOffset() + 1
	if _, err := r.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	m.truncate(off)
	if r.Sealed() {
		t.Fatal("still sealed after TruncateTo")
	}
	g.next = m.next()
	fill(t, r, m, g, 10)
	checkAgainst(t, r, m)
	// Truncating everything resets the creation time and empties it.
	created := r.Created()
	if _, err := r.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if !r.Created().After(created) && !r.Created().Equal(created) {
		t.Fatal("Created went back")
	}
	checkAgainst(t, r, &model{})
	b := buildBatch(t, 0, []int32{0}, []int64{1}, 10, rng)
	if pos, err := r.Append(record.Batch(b)); err != nil || pos != 0 {
		t.Fatalf("append after truncating everything: %d, %v", pos, err)
	}
}
