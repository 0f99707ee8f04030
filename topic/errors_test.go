package topic

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaCodes pins the Kafka code of each sentinel that has one.
func TestKafkaCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrInvalidName, kerr.InvalidTopicException},
		{ErrReservedName, kerr.InvalidTopicException},
		{ErrNameCollision, kerr.InvalidTopicException},
		{ErrInvalidConfig, kerr.InvalidConfig},
		{ErrExists, kerr.TopicAlreadyExists},
		{ErrNotFound, kerr.UnknownTopicOrPartition},
		{ErrInvalidPartitions, kerr.InvalidPartitions},
		{ErrCorrupt, kerr.CorruptMessage},
		{ErrFailed, kerr.KafkaStorageError},
		{ErrPartitionOutOfRange, kerr.UnknownTopicOrPartition},
		{ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{ErrDuplicateSequence, kerr.DuplicateSequenceNumber},
		{ErrProducerFenced, kerr.InvalidProducerEpoch},
		{ErrUnknownProducerID, kerr.UnknownProducerID},
		{ErrInvalidBatch, kerr.InvalidRecord},
		{ErrClosed, kerr.UnknownServerError},
	} {
		if got := errs.Kafka(fmt.Errorf("ctx: %w", c.err)); got != c.want {
			t.Errorf("%v: Kafka = %s, want %s", c.err, got.Message, c.want.Message)
		}
	}
	if !errors.Is(ErrClosed, errs.ErrClosed) || !errors.Is(ErrCorrupt, errs.ErrCorrupt) {
		t.Error("ErrClosed or ErrCorrupt does not match the shared class")
	}
}

// TestCorruptCatalogNamesItsFile: each kind of damage to the catalog, found
// by a writable or a read-only open, is an *errs.Corruption naming the
// catalog file, matching ErrCorrupt and errs.ErrCorrupt, with the file
// named once.
func TestCorruptCatalogNamesItsFile(t *testing.T) {
	healthy := t.TempDir()
	c, err := OpenCatalog(healthy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("events", Config{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(healthy, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	write := func(f func(b []byte) []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, CatalogFile), f(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"flipped byte", write(func(b []byte) []byte { b[len(b)/2] ^= 0x20; return b })},
		{"truncated", write(func(b []byte) []byte { return b[:len(b)-3] })},
		{"bad magic", write(func(b []byte) []byte { copy(b, "XXXX"); return b })},
		{"empty", write(func(b []byte) []byte { return b[:0] })},
		{"too large", func(t *testing.T, dir string) {
			write(func(b []byte) []byte { return b })(t, dir)
			if err := os.Truncate(filepath.Join(dir, CatalogFile), maxCatalogBytes+1); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing beside partitions", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, DirName("events", 0)), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, readOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", d.name, readOnly), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, CatalogFile)
				d.damage(t, dir)
				c, err := OpenCatalog(dir, &Options{ReadOnly: readOnly})
				if err == nil {
					c.Close()
					t.Fatal("opened")
				}
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) {
					t.Fatalf("%v: not ErrCorrupt and errs.ErrCorrupt", err)
				}
				var ce *errs.Corruption
				if !errors.As(err, &ce) || ce.Path != path {
					t.Fatalf("%v: no *errs.Corruption naming %s", err, path)
				}
				if n := strings.Count(err.Error(), CatalogFile); n != 1 {
					t.Errorf("%q names the file %d times", err, n)
				}
			})
		}
	}
}

// TestCorruptSnapshotIsTheSharedClass: a damaged producer-state snapshot
// matches errs.ErrCorrupt and says the byte position.
func TestCorruptSnapshotIsTheSharedClass(t *testing.T) {
	s := newState(t, nil)
	var next int64
	mustAppend(t, s, hdr{pid: 7, epoch: 1, seq: 0, count: 2}, &next)
	snap := s.MarshalSnapshot(next)
	snap[len(snap)-1] ^= 1
	_, err := newState(t, nil).LoadSnapshot(snap)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) || !strings.Contains(err.Error(), "at byte") {
		t.Fatalf("damaged snapshot: %v", err)
	}
}
