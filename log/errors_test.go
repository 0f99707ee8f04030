package log

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaCodes pins the Kafka code of each sentinel that has one, and the
// shared class of the others.
func TestKafkaCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrFailed, kerr.KafkaStorageError},
		{ErrCorrupt, kerr.CorruptMessage},
		{ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{&OffsetOutOfRangeError{Offset: 9, Start: 0, End: 5}, kerr.OffsetOutOfRange},
		{ErrInvalidBatch, kerr.CorruptMessage},
		{ErrBatchTooLarge, kerr.MessageTooLarge},
		{ErrNoKey, kerr.InvalidRecord},
		{ErrTruncated, kerr.NotLeaderForPartition},
		{ErrNoData, kerr.UnknownServerError},
	} {
		wrapped := fmt.Errorf("partition p-0: %w", c.err)
		if got := errs.Kafka(wrapped); got != c.want {
			t.Errorf("%v: Kafka = %v, want %v", c.err, got.Message, c.want.Message)
		}
	}
	for _, err := range []error{ErrBatchTooLarge, ErrNoKey} {
		if !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%v does not match ErrInvalidBatch", err)
		}
	}
	if !errors.Is(ErrClosed, errs.ErrClosed) || !errors.Is(ErrCorrupt, errs.ErrCorrupt) {
		t.Error("ErrClosed or ErrCorrupt does not match the shared class")
	}
	if !errors.Is(&OffsetOutOfRangeError{}, ErrOffsetOutOfRange) {
		t.Error("*OffsetOutOfRangeError does not match ErrOffsetOutOfRange")
	}
}

// TestAppendErrorsCarryTheirCode: what Append refuses maps to the code a
// Kafka broker answers a produce with, and says its class once.
func TestAppendErrorsCarryTheirCode(t *testing.T) {
	l := openT(t, nil, t.TempDir(), &Options{MaxBatchBytes: 200}, State{})
	_, _, err := l.Append(makeBatch(t, "big", 0, 4, 100, 1))
	if !errors.Is(err, ErrBatchTooLarge) || !errors.Is(err, ErrInvalidBatch) || errs.Kafka(err) != kerr.MessageTooLarge {
		t.Fatalf("oversized batch: %v (%v)", err, errs.Kafka(err))
	}
	if strings.Contains(err.Error(), "invalid batch") {
		t.Errorf("%q: says its class twice (too large is an invalid batch)", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Append(makeBatch(t, "late", 0, 1, 10, 1)); !errors.Is(err, ErrClosed) || !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}
}

// TestDamageMatchesTheSharedClass: damage in a trusted segment (not scanned
// at open) surfaces from the log's reads matching ErrCorrupt and
// errs.ErrCorrupt, naming the segment's file once.
func TestDamageMatchesTheSharedClass(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(data []byte, second int) []byte
		// located: the error is an *errs.Corruption naming the file and
		// the byte position of the bad batch.
		located bool
	}{
		{"bad magic", func(data []byte, second int) []byte { data[second+16] = 7; return data }, true},
		{"batch runs past the end", func(data []byte, second int) []byte { data[second+11]++; return data }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, bases, st := buildLog(t, dir, 30)
			path := segment.LogPath(dir, bases[2])
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			second := int(data[8])<<24 | int(data[9])<<16 | int(data[10])<<8 | int(data[11]) + 12
			if err := os.WriteFile(path, c.damage(data, second), 0o644); err != nil {
				t.Fatal(err)
			}
			l := openT(t, nil, dir, &Options{SegmentBytes: 1024}, st)
			// A read delivers the good batches before the damage; the read
			// that starts at the damaged batch reports it.
			for off, reads := bases[2]+2, 0; reads < 10; reads++ {
				var v *readpath.View
				if v, err = l.Read(off, 100); err != nil {
					break
				}
				// Go on after the batches by their headers (the misframed
				// one fails its CRC, which is the consumer's check).
				herr := readpath.Guard(func() error {
					buf, err := v.Bytes()
					for err == nil && len(buf) > 0 {
						var n int
						if n, err = record.CheckHeader(buf); err == nil {
							off = record.Batch(buf).LastOffset() + 1
							buf = buf[n:]
						}
					}
					return err
				})
				v.Release()
				if herr != nil {
					t.Fatalf("read at %d: %v", off, herr)
				}
			}
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) || !errors.Is(err, segment.ErrCorrupt) {
				t.Fatalf("%v: not log, segment and errs ErrCorrupt", err)
			}
			if n := strings.Count(err.Error(), path); n != 1 {
				t.Errorf("%q names the file %d times", err, n)
			}
			var ce *errs.Corruption
			// A longer length misframes what follows: the scan finds the
			// damage at or after the batch changed.
			if c.located && (!errors.As(err, &ce) || ce.Path != path || ce.Pos < int64(second)) {
				t.Errorf("%v: no *errs.Corruption naming %s at byte %d or later", err, path, second)
			}
		})
	}
}
