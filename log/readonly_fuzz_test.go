package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// fuzzROBase is the files of a healthy one-segment log that FuzzReadOnly
// damages: built once, by a writable log.
var fuzzROBase struct {
	once    sync.Once
	err     error
	log     []byte
	index   []byte
	time    []byte
	batches [][]byte // the batches, in order, as on disk
}

func buildFuzzROBase(t testing.TB) {
	fuzzROBase.once.Do(func() {
		dir, err := os.MkdirTemp("", "folio-log-fuzz-ro")
		if err != nil {
			fuzzROBase.err = err
			return
		}
		defer os.RemoveAll(dir)
		l, err := Open(nil, dir, &Options{FlushPolicy: FlushNone, IndexIntervalBytes: 150, RetentionCheckInterval: -1}, State{})
		if err != nil {
			fuzzROBase.err = err
			return
		}
		for i := int64(0); i < 24; i++ {
			n := 1 + int(i%3)
			b := makeBatch(t, "z", 0, n, 20+int(i%4)*10, 100+i*10-(i%5)*7) // timestamps not monotonic
			if _, _, err := l.Append(b); err != nil {
				fuzzROBase.err = err
				return
			}
			fuzzROBase.batches = append(fuzzROBase.batches, bytes.Clone(b))
		}
		if err := l.Close(); err != nil {
			fuzzROBase.err = err
			return
		}
		read := func(suffix string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, segment.FileName(0, suffix)))
			if err != nil && fuzzROBase.err == nil {
				fuzzROBase.err = err
			}
			return b
		}
		fuzzROBase.log = read(segment.LogSuffix)
		fuzzROBase.index = read(segment.IndexSuffix)
		fuzzROBase.time = read(segment.TimeIndexSuffix)
	})
	if fuzzROBase.err != nil {
		t.Fatal(fuzzROBase.err)
	}
}

// FuzzReadOnly damages the files of a one-segment log as the input says
// (byte flips, cuts and appended garbage in the .log; the indexes kept,
// removed, padded with the zeroed tail a live writer preallocates, or
// replaced by garbage) and opens it read-only. It must never panic nor
// fail to open; reads and time lookups fail only with ErrCorrupt; every
// read of an offset in the valid prefix (what recovery would keep, by
// segment.Verify) returns exactly the original batches; the visible end
// is never below the valid prefix, and without an offset index (nothing
// to start the tail scan from) it is exactly the valid prefix's end.
func FuzzReadOnly(f *testing.F) {
	f.Add([]byte{}, uint8(0), []byte{})
	f.Add([]byte{1, 0x05, 0x00, 0}, uint8(1), []byte{})    // cut mid-file, no indexes
	f.Add([]byte{1, 0x0f, 0xff, 0}, uint8(0), []byte{})    // cut near the end (torn tail)
	f.Add([]byte{0, 0x02, 0x10, 0x55}, uint8(2), []byte{}) // a flipped byte, zero-padded indexes
	f.Add([]byte{2, 0, 0, 40, 0, 0x09, 0x00, 1}, uint8(3), []byte{0, 0, 0, 5, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0})
	f.Add([]byte{0, 0x00, 0x03, 0xff, 1, 0x03, 0x00, 0}, uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, ops []byte, indexMode uint8, garbage []byte) {
		buildFuzzROBase(t)
		logData := bytes.Clone(fuzzROBase.log)
		for i := 0; i+4 <= len(ops) && i < 64; i += 4 {
			pos := int(ops[i+1])<<8 | int(ops[i+2])
			switch ops[i] % 3 {
			case 0: // flip a byte
				if len(logData) > 0 {
					logData[pos%len(logData)] ^= ops[i+3] | 1
				}
			case 1: // cut
				if len(logData) > 0 {
					logData = logData[:pos%(len(logData)+1)]
				}
			case 2: // garbage at the end
				logData = append(logData, bytes.Repeat([]byte{ops[i+3]}, int(ops[i+3]%97))...)
			}
		}
		dir := t.TempDir()
		write := func(suffix string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, segment.FileName(0, suffix)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(segment.LogSuffix, logData)
		hasIndex := true
		switch indexMode % 4 {
		case 0:
			write(segment.IndexSuffix, fuzzROBase.index)
			write(segment.TimeIndexSuffix, fuzzROBase.time)
		case 1:
			hasIndex = false
		case 2:
			write(segment.IndexSuffix, append(bytes.Clone(fuzzROBase.index), make([]byte, 4096)...))
			write(segment.TimeIndexSuffix, append(bytes.Clone(fuzzROBase.time), make([]byte, 4092)...))
		case 3:
			write(segment.IndexSuffix, garbage)
			write(segment.TimeIndexSuffix, garbage)
		}

		rep, err := segment.Verify(nil, dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		validEnd := rep.LastOffset + 1
		o := Options{ReadOnly: true, ReadPath: readpath.Kind(indexMode / 4 % 2)}
		r, err := Open(newNoWriteFS(t), dir, &o, State{})
		if err != nil {
			t.Fatalf("read-only open: %v", err)
		}
		defer r.Close()
		end := r.LogEndOffset()
		// Where the bytes of the original batches are untouched (only cut,
		// or garbage appended), the index is right about them, and the
		// visible end is where recovery would cut; so it is without an
		// index, whatever the damage. A damaged batch before the last
		// index entry can be missed (the scan starts at that entry, as a
		// clean open does), but what precedes the damage stays readable.
		common := min(len(logData), len(fuzzROBase.log))
		untouched := bytes.Equal(logData[:common], fuzzROBase.log[:common])
		if (!hasIndex || (untouched && indexMode%4 != 3)) && end != validEnd {
			t.Fatalf("visible end %d; the valid prefix ends at %d (index present: %v)", end, validEnd, hasIndex)
		}
		// Every offset of the valid prefix, up to the first batch the input
		// changed, reads back the original batches. (A changed batch can
		// still be valid: the base offset is outside the CRC.)
		var base, pos int64
		for _, orig := range fuzzROBase.batches {
			last := record.Batch(orig).LastOffset()
			if pos+int64(len(orig)) > rep.ValidBytes || !bytes.Equal(logData[pos:pos+int64(len(orig))], orig) {
				break
			}
			pos += int64(len(orig))
			for off := base; off <= last; off++ {
				v, err := r.Read(off, 1)
				if err != nil {
					t.Fatalf("read at %d of the valid prefix: %v", off, err)
				}
				var got []byte
				gerr := readpath.Guard(func() error {
					b, err := v.Bytes()
					got = bytes.Clone(b)
					return err
				})
				v.Release()
				if gerr != nil || !bytes.Equal(got, orig) {
					t.Fatalf("read at %d: %d bytes (%v), want the original batch %d..%d", off, len(got), gerr, base, last)
				}
			}
			base = last + 1
		}
		if end < base {
			t.Fatalf("visible end %d, below the intact batches' end %d", end, base)
		}
		// Beyond it, anything but a panic or an error other than
		// corruption.
		for off := validEnd; off <= end; off++ {
			v, err := r.Read(off, 1<<20)
			if err == nil {
				v.Release()
			} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNoData) {
				t.Fatalf("read at %d: %v", off, err)
			}
		}
		for ts := int64(90); ts <= 340; ts += 25 {
			if _, _, err := r.OffsetForTime(time.UnixMilli(ts)); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("OffsetForTime(%d): %v", ts, err)
			}
		}
		if err := r.Refresh(); err != nil || r.LogEndOffset() != end {
			t.Fatalf("refresh of unchanged files: %v, end %d then %d", err, end, r.LogEndOffset())
		}
	})
}
