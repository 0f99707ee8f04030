package folio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaCodes pins the Kafka code of each sentinel of this package.
func TestKafkaCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrCorrupt, kerr.CorruptMessage},
		{ErrTopicExists, kerr.TopicAlreadyExists},
		{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
		{ErrUnknownPartition, kerr.UnknownTopicOrPartition},
		{ErrInvalidName, kerr.InvalidTopicException},
		{ErrReservedName, kerr.InvalidTopicException},
		{ErrInvalidConfig, kerr.InvalidConfig},
		{ErrMessageTooLarge, kerr.MessageTooLarge},
		{ErrUnknownOutcome, kerr.RequestTimedOut},
		{fmt.Errorf("%w: %w", ErrUnknownOutcome, context.Canceled), kerr.RequestTimedOut},
		{ErrDiskFull, kerr.KafkaStorageError},
		{ErrPartitionFailed, kerr.KafkaStorageError},
		{ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{&OffsetOutOfRangeError{Topic: "t", Offset: 9, End: 5}, kerr.OffsetOutOfRange},
		{ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{ErrProducerFenced, kerr.InvalidProducerEpoch},
		{ErrDuplicateSequence, kerr.DuplicateSequenceNumber},
		{ErrInvalidBatch, kerr.CorruptMessage},
		{ErrNoKey, kerr.InvalidRecord},
		// No Kafka equivalent: what the endpoint wraps them with decides.
		{ErrClosed, kerr.UnknownServerError},
		{ErrDirLocked, kerr.UnknownServerError},
		{ErrReadOnly, kerr.UnknownServerError},
	} {
		if got := errs.Kafka(fmt.Errorf("folio: topic %q: %w", "t", c.err)); got != c.want {
			t.Errorf("%v: Kafka = %s, want %s", c.err, got.Message, c.want.Message)
		}
	}
	if !errors.Is(&OffsetOutOfRangeError{}, ErrOffsetOutOfRange) {
		t.Error("*OffsetOutOfRangeError does not match ErrOffsetOutOfRange")
	}
}

// TestOneClassForEveryLayer: every package's corruption matches ErrCorrupt
// (IsCorrupt), and every package's closed error matches ErrClosed.
func TestOneClassForEveryLayer(t *testing.T) {
	for _, err := range []error{record.ErrCorrupt, index.ErrCorrupt, segment.ErrCorrupt, log.ErrCorrupt,
		topic.ErrCorrupt, group.ErrCorrupt, errs.ErrCorrupt} {
		if w := fmt.Errorf("ctx: %w", err); !errors.Is(w, ErrCorrupt) || !IsCorrupt(w) {
			t.Errorf("%v is not ErrCorrupt", err)
		}
	}
	for _, err := range []error{index.ErrClosed, segment.ErrClosed, log.ErrClosed, topic.ErrClosed,
		group.ErrClosed, readpath.ErrClosed, errs.ErrClosed} {
		if !errors.Is(fmt.Errorf("ctx: %w", err), ErrClosed) {
			t.Errorf("%v is not ErrClosed", err)
		}
	}
	if IsCorrupt(ErrClosed) || IsCorrupt(ErrUnknownTopic) {
		t.Error("IsCorrupt of an error that is not corruption")
	}
}

// TestDamagedMetadataNamesItsFile: each kind of damage to the data
// directory's own files makes Open fail with an *errs.Corruption naming the
// file once, matching ErrCorrupt.
func TestDamagedMetadataNamesItsFile(t *testing.T) {
	healthy := t.TempDir()
	b := openT(t, healthy, nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range []string{FormatFile, CheckpointFile, topic.CatalogFile} {
		data, err := os.ReadFile(filepath.Join(healthy, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	for _, c := range []struct {
		name, file string
		damage     func([]byte) []byte
	}{
		{"format: flipped payload", FormatFile, func(b []byte) []byte { b[len(b)-6] ^= 1; return b }},
		{"format: truncated", FormatFile, func(b []byte) []byte { return b[:5] }},
		{"format: wrong payload", FormatFile, func([]byte) []byte { return encodeMeta(formatMagic, FormatVersion, []byte("not folio")) }},
		{"checkpoint: flipped crc", CheckpointFile, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"checkpoint: length field", CheckpointFile, func(b []byte) []byte { b[11] ^= 0x40; return b }},
		{"checkpoint: entries past the payload", CheckpointFile, func([]byte) []byte {
			return encodeMeta(checkpointMagic, checkpointVersion, []byte{0, 0, 0, 9})
		}},
		{"catalog: flipped byte", topic.CatalogFile, func(b []byte) []byte { b[len(b)/2] ^= 0x20; return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(healthy)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, c.damage(append([]byte(nil), files[c.file]...)), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := Open(dir, nil)
			if err == nil {
				b.Close()
				t.Fatal("opened")
			}
			t.Log(err)
			if !errors.Is(err, ErrCorrupt) || !IsCorrupt(err) {
				t.Fatalf("%v: not ErrCorrupt", err)
			}
			var ce *errs.Corruption
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("%v: no *errs.Corruption naming %s", err, path)
			}
			if n := strings.Count(err.Error(), c.file); n != 1 {
				t.Errorf("%q names %s %d times", err, c.file, n)
			}
		})
	}
}

// TestDamagedCleanMarkerNamesItsFile: a damaged clean-shutdown marker
// counts as absent, and the damage it reports names the file.
func TestDamagedCleanMarkerNamesItsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CleanShutdownFile)
	for name, data := range map[string][]byte{
		"flipped byte":  func() []byte { b := encodeCleanMarker(time.UnixMilli(1_700_000_000_000)); b[len(b)-2] ^= 1; return b }(),
		"wrong payload": encodeMeta(cleanMagic, cleanVersion, []byte{1, 2}),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		clean, _, damaged := readCleanMarker(vfs.Default, dir)
		var ce *errs.Corruption
		if clean || !IsCorrupt(damaged) || !errors.As(damaged, &ce) || ce.Path != path {
			t.Errorf("%s: clean %v, damage %v", name, clean, damaged)
		}
	}
}

// TestGroupCorruptionIsCorrupt: one flipped byte in a __consumer_offsets
// segment after a clean shutdown costs only the damaged batch: Open cuts
// the partition there, as after a crash, and warns with the damage, which
// IsCorrupt finds and which names the partition; the commits before it
// hold, and the next open is clean.
func TestGroupCorruptionIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 1})
	produceN(t, producerT(t, b, nil), "t", "g", 5) // commits within the log: no clamp
	c, err := b.GroupCoordinator()
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(1); off <= 3; off++ {
		resp, err := c.OffsetCommit(context.Background(), &group.OffsetCommitRequest{Group: "g", GenerationID: -1,
			Topics: []group.OffsetCommitTopic{{Topic: "t", Partitions: []group.OffsetCommitPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}}})
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, topic.DirName(group.OffsetsTopic, group.PartitionFor("g", DefaultOffsetsPartitions)))
	seg := segment.LogPath(pdir, 0)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	committed := func(b *Broker) int64 {
		t.Helper()
		lags, err := b.GroupLag("g")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lags {
			if l.Topic == "t" && l.Partition == 0 {
				return l.Committed
			}
		}
		return -1
	}
	for run := range 2 {
		var warned errWarnings
		b, err = Open(dir, &Options{Logger: slog.New(&warned)})
		if err != nil {
			t.Fatalf("open %d of a directory whose offsets hold a valid prefix: %v", run, err)
		}
		if run == 0 {
			damage := warned.err()
			t.Log(damage)
			var ce *errs.Corruption
			if !IsCorrupt(damage) || !errors.Is(damage, errs.ErrCorrupt) || !errors.As(damage, &ce) || ce.Path != pdir {
				t.Fatalf("warnings %v, damage %v: not IsCorrupt with an *errs.Corruption naming %s", warned.msgs, damage, pdir)
			}
		} else if len(warned.msgs) != 0 {
			t.Fatalf("reopen after the cut warns: %v", warned.msgs)
		}
		if off := committed(b); off != 2 {
			t.Fatalf("open %d: committed offset %d, want 2 (the last commit before the damage)", run, off)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// errWarnings is a slog.Handler that keeps the messages logged at Warn
// and above and the error values among their attributes.
type errWarnings struct {
	mu    sync.Mutex
	msgs  []string
	errs  []error
	attrs map[string]string
}

func (w *errWarnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *errWarnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	if w.attrs == nil {
		w.attrs = map[string]string{}
	}
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok {
			w.errs = append(w.errs, e)
		}
		w.attrs[a.Key] = a.Value.String()
		return true
	})
	return nil
}
func (w *errWarnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *errWarnings) WithGroup(string) slog.Handler      { return w }

// attrText returns the text of the last attribute named key, "" if none.
func (w *errWarnings) attrText(key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.attrs[key]
}

// err returns the first error logged, nil if none.
func (w *errWarnings) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) == 0 {
		return nil
	}
	return w.errs[0]
}
