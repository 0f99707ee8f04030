package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestErrorCodesAreKafkas pins every protocol error to Kafka's code and
// name (org.apache.kafka.common.protocol.Errors), through the shared
// mapping and back.
func TestErrorCodesAreKafkas(t *testing.T) {
	for _, c := range []struct {
		err  *kerr.Error
		code int16
		name string
	}{
		{ErrUnknownServerError, -1, "UNKNOWN_SERVER_ERROR"},
		{ErrUnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{ErrOffsetMetadataTooLarge, 12, "OFFSET_METADATA_TOO_LARGE"},
		{ErrCoordinatorLoadInProgress, 14, "COORDINATOR_LOAD_IN_PROGRESS"},
		{ErrCoordinatorNotAvailable, 15, "COORDINATOR_NOT_AVAILABLE"},
		{ErrNotCoordinator, 16, "NOT_COORDINATOR"},
		{ErrIllegalGeneration, 22, "ILLEGAL_GENERATION"},
		{ErrInconsistentGroupProtocol, 23, "INCONSISTENT_GROUP_PROTOCOL"},
		{ErrInvalidGroupID, 24, "INVALID_GROUP_ID"},
		{ErrUnknownMemberID, 25, "UNKNOWN_MEMBER_ID"},
		{ErrInvalidSessionTimeout, 26, "INVALID_SESSION_TIMEOUT"},
		{ErrRebalanceInProgress, 27, "REBALANCE_IN_PROGRESS"},
		{ErrInvalidCommitOffsetSize, 28, "INVALID_COMMIT_OFFSET_SIZE"},
		{ErrInvalidRequest, 42, "INVALID_REQUEST"},
		{ErrNonEmptyGroup, 68, "NON_EMPTY_GROUP"},
		{ErrGroupIDNotFound, 69, "GROUP_ID_NOT_FOUND"},
		{ErrMemberIDRequired, 79, "MEMBER_ID_REQUIRED"},
		{ErrGroupMaxSizeReached, 81, "GROUP_MAX_SIZE_REACHED"},
		{ErrFencedInstanceID, 82, "FENCED_INSTANCE_ID"},
		{ErrGroupSubscribedToTopic, 86, "GROUP_SUBSCRIBED_TO_TOPIC"},
	} {
		if c.err.Code != c.code || c.err.Message != c.name {
			t.Errorf("%s: code %d name %s, want %d %s", c.name, c.err.Code, c.err.Message, c.code, c.name)
		}
		wrapped := fmt.Errorf("group %q: member %q: %w", "g", "m", c.err)
		if got := errs.Code(wrapped); got != c.code {
			t.Errorf("errs.Code(wrapped %s) = %d", c.name, got)
		}
		if back := kerr.ErrorForCode(c.code); back != error(c.err) {
			t.Errorf("kerr.ErrorForCode(%d) = %v, want %v", c.code, back, c.err)
		}
		if !errors.Is(wrapped, c.err) {
			t.Errorf("errors.Is(wrapped, %s) is false", c.name)
		}
	}
	if errs.Code(context.Canceled) != 7 || errs.Code(fmt.Errorf("x: %w", context.DeadlineExceeded)) != 7 {
		t.Error("an ended context is REQUEST_TIMED_OUT")
	}
	closed := errClosed()
	if !errors.Is(closed, ErrClosed) || !errors.Is(closed, errs.ErrClosed) || errs.Code(closed) != 15 {
		t.Errorf("a closed coordinator: %v code %d", closed, errs.Code(closed))
	}
	// A sentinel declared with the same code (as topic.ErrNotFound is)
	// matches the protocol value.
	notFound := errs.New("topic: unknown topic", kerr.UnknownTopicOrPartition)
	if !errors.Is(fmt.Errorf("%w: %q", notFound, "t"), ErrUnknownTopicOrPartition) {
		t.Error("a sentinel with UNKNOWN_TOPIC_OR_PARTITION does not match ErrUnknownTopicOrPartition")
	}
	if !errors.Is(ErrCorrupt, errs.ErrCorrupt) {
		t.Error("ErrCorrupt does not match errs.ErrCorrupt")
	}
}

// batchesStore is a one-partition Store holding fixed batches.
type batchesStore []record.Batch

func (s batchesStore) Partitions() int32 { return 1 }
func (s batchesStore) Append(int32, record.Batch) (int64, error) {
	return 0, errors.New("read-only test store")
}
func (s batchesStore) Scan(_ int32, fn func(record.Batch) error) error {
	for _, b := range s {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// TestDamagedOffsetsPartition: damage in __consumer_offsets is an
// *errs.Corruption naming the partition and the batch's offset, matching
// ErrCorrupt and errs.ErrCorrupt, whether the bytes fail their checksum
// (found by the log store) or their records do not frame (found by the
// coordinator). A Store that can cut (the log store) is cut at the damage
// with a warning that carries it, keeping the commits before it; any other
// Store fails the load with it.
func TestDamagedOffsetsPartition(t *testing.T) {
	t.Run("checksum", func(t *testing.T) {
		dir := t.TempDir()
		logs := openLogs(t, vfs.Default, dir, 1, log.FlushSync)
		c := newTestCoordinator(t, LogStore(logs), bigTopics{1}, nil)
		for off := int64(1); off <= 3; off++ {
			if err := simpleCommit(c, "g", 0, off); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		pdir := logs[0].Dir()
		closeLogs(logs)
		st := logs[0].Checkpoint() // clean: the damage is not scanned away
		seg := filepath.Join(pdir, "00000000000000000000.log")
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-1] ^= 0xff // the last batch's last byte
		if err := os.WriteFile(seg, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := log.Open(vfs.Default, pdir, &log.Options{RetentionAge: -1, RetentionCheckInterval: -1}, st)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var warned warnings
		c, err = NewCoordinator(&Options{Store: LogStore([]*log.Log{l}), Topics: bigTopics{1}, Logger: slog.New(&warned)})
		if err != nil {
			t.Fatalf("load of a partition with a valid prefix: %v", err)
		}
		defer c.Close()
		damage, ok := warned.attr("damage").(error)
		if !ok {
			t.Fatalf("no warning carrying the damage: %v", warned.msgs)
		}
		checkLocated(t, damage, pdir, 2)
		if from, to := warned.attr("cutFrom"), warned.attr("cutTo"); from != int64(2) || to != int64(3) {
			t.Fatalf("warning says cut [%v, %v), want [2, 3)", from, to)
		}
		if off := fetchOffset(t, c, "g", TopicPartition{"t", 0}); off != 2 {
			t.Fatalf("committed offset %d after the cut, want 2 (the last commit before the damage)", off)
		}
		if end := l.LogEndOffset(); end != 2 {
			t.Fatalf("log end %d after the cut, want 2", end)
		}
		// The cut partition takes commits again, right after the cut.
		if err := simpleCommit(c, "g", 0, 9); err != nil {
			t.Fatal(err)
		}
		if end := l.LogEndOffset(); end != 3 {
			t.Fatalf("log end %d after a commit, want 3", end)
		}
	})
	t.Run("record framing", func(t *testing.T) {
		bld, _ := record.NewBuilder(nil)
		_ = bld.Append(record.Record{Key: appendGroupKey(nil, "g"), Value: []byte{0, 3}})
		b, err := bld.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.SetBaseOffset(40)
		b[record.HeaderSize] = 0x7f // the first record's length
		binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
		_, err = NewCoordinator(&Options{Store: batchesStore{b}, Topics: bigTopics{1}})
		checkLocated(t, err, OffsetsTopic+"-0", 40)
	})
}

func checkLocated(t *testing.T, err error, path string, offset int64) {
	t.Helper()
	t.Log(err)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) {
		t.Fatalf("%v: not ErrCorrupt and errs.ErrCorrupt", err)
	}
	var ce *errs.Corruption
	if !errors.As(err, &ce) || ce.Path != path || ce.Offset != offset {
		t.Fatalf("%v: no *errs.Corruption at %s offset %d", err, path, offset)
	}
	if n := strings.Count(err.Error(), path); n != 1 {
		t.Errorf("%q names %s %d times", err, path, n)
	}
}

// warnings is a slog.Handler that keeps what was logged at Warn and above,
// with the attributes' values as they were passed (errors stay errors).
type warnings struct {
	msgs  []string
	attrs map[string]any
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.msgs = append(w.msgs, r.Message)
	if w.attrs == nil {
		w.attrs = map[string]any{}
	}
	r.Attrs(func(a slog.Attr) bool {
		w.attrs[a.Key] = a.Value.Any()
		return true
	})
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }
func (w *warnings) attr(key string) any                { return w.attrs[key] }
