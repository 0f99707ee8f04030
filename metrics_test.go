package folio

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs/faultfs"
)

// recordingMetrics counts the events a Broker reports.
type recordingMetrics struct {
	NoMetrics
	mu                                     sync.Mutex // guards the fields below
	appended, appendedRecs, failed         int
	consumed, fsynced, checkpoints, blocks int
	lastFailure                            error
}

func (m *recordingMetrics) Appended(_ string, _ int32, n, bytes int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.appended++
	m.appendedRecs += n
}

func (m *recordingMetrics) AppendFailed(_ string, _ int32, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed++
	m.lastFailure = err
}

func (m *recordingMetrics) Consumed(_ string, _ int32, n, _ int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.consumed += n
}

func (m *recordingMetrics) Fsynced(topicName string, partition int32, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if topicName == "t" && partition == 0 && took >= 0 {
		m.fsynced++
	}
}

func (m *recordingMetrics) ProduceBlocked(time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks++
}

func (m *recordingMetrics) Checkpointed(n int, _ time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil && n == 1 {
		m.checkpoints++
	}
}

func TestMetricsAndStats(t *testing.T) {
	m := &recordingMetrics{}
	b := openT(t, t.TempDir(), &Options{Metrics: m, CheckpointInterval: -1})
	createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "m", 20)
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	pollN(t, c, 20)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	bld, _ := record.NewBuilder(nil)
	_ = bld.Append(record.Record{Value: make([]byte, 2<<20)})
	big, _ := bld.Build(nil)
	if _, err := b.AppendBatch(context.Background(), "t", 0, big); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatal(err)
	}
	m.mu.Lock()
	if m.appended != 20 || m.appendedRecs != 20 || m.consumed != 20 || m.checkpoints != 1 || m.fsynced < 20 {
		t.Errorf("metrics: %d appends of %d records, %d consumed, %d checkpoints, %d fsyncs", m.appended, m.appendedRecs, m.consumed, m.checkpoints, m.fsynced)
	}
	m.mu.Unlock()

	st := b.Stats()
	ps := st.Partitions[0]
	batches := rawBatches(t, b, "t", 0)
	var size int64
	for _, bt := range batches {
		size += int64(len(bt))
	}
	if ps.Topic != "t" || ps.LogEndOffset != 20 || ps.HighWatermark != 20 || ps.DurableEndOffset != 20 || ps.Segments != 1 || ps.Bytes != size {
		t.Errorf("partition stats %+v", ps)
	}
	if ps.Fsync.Count < 20 || ps.Fsync.P50 <= 0 || ps.Fsync.Max < ps.Fsync.P99 || ps.Fsync.P99 < ps.Fsync.P50 || ps.Fsync.Mean <= 0 {
		t.Errorf("fsync stats %+v", ps.Fsync)
	}
	if ps.Producers != 1 || st.Producers != 1 || st.Consumers != 1 || st.Checkpoints != 1 || st.MaxOpenSegments != DefaultMaxOpenSegments || st.OpenFiles == 0 {
		t.Errorf("broker stats %+v", st)
	}
	if len(ps.Consumers) != 1 || ps.Consumers[0].Lag != 0 || ps.Consumers[0].Position != 20 {
		t.Errorf("consumer lag %+v", ps.Consumers)
	}

	// A failed write is reported.
	fs := faultfs.New()
	m2 := &recordingMetrics{}
	b2 := openT(t, t.TempDir(), &Options{Metrics: m2, CheckpointInterval: -1, FS: fs})
	createTopicT(t, b2, "t", TopicConfig{Flush: FlushNone})
	p2 := producerT(t, b2, nil)
	fs.SetHook(func(op faultfs.Op) error {
		if op.Kind == faultfs.OpWrite && strings.HasSuffix(op.Path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	if _, _, err := p2.Produce(context.Background(), &Record{Topic: "t", Value: []byte("x")}); !errors.Is(err, ErrPartitionFailed) {
		t.Fatalf("produce on a failing disk: %v", err)
	}
	m2.mu.Lock()
	defer m2.mu.Unlock()
	if m2.failed != 1 || !errors.Is(m2.lastFailure, syscall.EIO) {
		t.Errorf("AppendFailed: %d calls, last %v", m2.failed, m2.lastFailure)
	}
	fs.SetHook(nil)
}

// TestStatsGroups: Stats carries the group coordinator's counters.
func TestStatsGroups(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	if st := b.Stats(); st.Groups.Groups != 0 || st.Groups.Members != 0 {
		t.Fatalf("group stats before any group: %+v", st.Groups)
	}
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	gc, err := b.JoinGroup(context.Background(), "g", []string{"t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if st := b.Stats(); st.Groups.Groups != 1 || st.Groups.Members != 1 || st.Groups.Rebalances < 1 {
		t.Fatalf("group stats with one member: %+v", st.Groups)
	}
}
