package segment

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"testing"

	"github.com/foliolog/folio/record"
)

// FuzzRecover: whatever the .log holds, Open + Recover never panics, keeps
// exactly the valid prefix the reference checker finds, and the recovered
// segment answers lookups for every kept batch; Verify, run before, finds
// the same prefix.
func FuzzRecover(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	var valid []byte
	g := newGen(f, rng, 0)
	for range 12 {
		valid = append(valid, g.batch()...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add(valid[:record.HeaderSize])
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0x10
	f.Add(flipped)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 200))
	garbage := make([]byte, 300)
	rng.Read(garbage)
	f.Add(garbage)
	f.Add(append(bytes.Clone(valid), valid...)) // offsets repeat

	f.Fuzz(func(t *testing.T, data []byte) {
		dir := segDir(t)
		if err := os.WriteFile(LogPath(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, verr := Verify(testFS, dir, 0)
		s, err := Open(testFS, dir, 0, &Options{IndexIntervalBytes: 100, MaxIndexBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Recover()
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		ref := refValidPrefix(data, 0)
		var valid int64
		if len(ref) > 0 {
			valid = ref[len(ref)-1].pos + ref[len(ref)-1].size
		}
		if res.ValidBytes != valid || res.Batches != len(ref) || res.BytesCut != int64(len(data))-valid {
			t.Fatalf("Recover = %+v; reference keeps %d bytes in %d batches", res, valid, len(ref))
		}
		// Verify, run on the files before Recover, agrees on the prefix,
		// and its first .log problem is where the prefix ends.
		if verr != nil {
			t.Fatalf("Verify: %v", verr)
		}
		if rep.ValidBytes != valid || rep.Batches != len(ref) || rep.LogBytes != int64(len(data)) {
			t.Fatalf("Verify = %+v; reference keeps %d bytes in %d batches", rep, valid, len(ref))
		}
		first := int64(-1)
		for _, p := range rep.Problems {
			if p.Path == LogPath(dir, 0) {
				first = p.Position
				break
			}
		}
		if (valid < int64(len(data))) != (first == valid) {
			t.Fatalf("Verify's first .log problem at %d, the valid prefix ends at %d of %d", first, valid, len(data))
		}
		got, err := os.ReadFile(LogPath(dir, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data[:valid]) {
			t.Fatal("the recovered .log is not the valid prefix")
		}
		// Offsets in fuzzed batches may be far apart, so check lookups per
		// batch rather than per offset.
		m := modelOf(data, 0)
		for _, b := range m.batches {
			h := b.h()
			for _, off := range []int64{h.BaseOffset(), h.LastOffset()} {
				pos, err := s.FindPosition(off)
				if err != nil || pos != m.batches[m.find(off)].pos {
					t.Fatalf("FindPosition(%d) = %d, %v", off, pos, err)
				}
			}
			v, err := s.Read(h.BaseOffset(), 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(viewBytes(t, v), b.bytes) {
				t.Fatalf("Read(%d) differs", h.BaseOffset())
			}
			ts := h.MaxTimestamp()
			o, ok, err := s.OffsetForTime(ts)
			wo, wok := m.offsetForTime(ts)
			if err != nil || ok != wok || o != wo {
				t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d, %v", ts, o, ok, err, wo, wok)
			}
		}
		if _, err := s.FindPosition(m.next()); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("FindPosition(next) = %v", err)
		}
	})
}
