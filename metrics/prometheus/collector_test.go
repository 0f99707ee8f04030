package folioprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	folioprom "github.com/foliolog/folio/metrics/prometheus"
	"github.com/foliolog/folio/topic"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// setup opens a Broker reporting to a Collector registered on a fresh
// registry.
func setup(t *testing.T, opts *folioprom.Options) (*folio.Broker, *folioprom.Collector, *prometheus.Registry) {
	t.Helper()
	m := folioprom.New(opts)
	b, err := folio.Open(t.TempDir(), &folio.Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	m.Attach(b)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	return b, m, reg
}

// produce writes n records to each partition of topicName.
func produce(t *testing.T, b *folio.Broker, topicName string, partitions int32, n int) {
	t.Helper()
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for part := range partitions {
		for i := range n {
			rec := &folio.Record{Topic: topicName, Partition: part, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("value")}
			if _, _, err := p.Produce(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// consume reads n records of a partition with a plain consumer.
func consume(t *testing.T, b *folio.Broker, topicName string, partition int32, n int) {
	t.Helper()
	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign(folio.Assignment{Topic: topicName, Partition: partition}); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < n; {
		recs, err := c.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
}

// gather returns the registry's families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of the series of name whose labels are labels
// (name=value pairs), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		if len(have) != len(labels)/2 {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestHookAndStats(t *testing.T) {
	b, _, reg := setup(t, nil)
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "orders", 2, 5)
	consume(t, b, "orders", 0, 5)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}

	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	// The counters of the hook, exactly.
	want := `
# HELP folio_records_in_total Records appended.
# TYPE folio_records_in_total counter
folio_records_in_total{partition="0",topic="orders"} 5
folio_records_in_total{partition="1",topic="orders"} 5
# HELP folio_records_out_total Records handed to consumers and Kafka fetches.
# TYPE folio_records_out_total counter
folio_records_out_total{partition="0",topic="orders"} 5
folio_records_out_total{partition="1",topic="orders"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "folio_records_in_total", "folio_records_out_total"); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	fams := gather(t, reg)
	for _, p := range st.Partitions {
		if p.Topic != "orders" {
			continue
		}
		part := fmt.Sprint(p.Partition)
		for name, wantV := range map[string]float64{
			"folio_log_size_bytes":             float64(p.Bytes),
			"folio_log_segments":               float64(p.Segments),
			"folio_partition_high_watermark":   5,
			"folio_partition_log_end_offset":   5,
			"folio_partition_log_start_offset": 0,
			"folio_partition_failed":           0,
		} {
			if got, ok := value(fams, name, "topic", "orders", "partition", part); !ok || got != wantV {
				t.Errorf("%s{partition=%s} = %v (present %v), want %v", name, part, got, ok, wantV)
			}
		}
		if got, _ := value(fams, "folio_bytes_in_total", "topic", "orders", "partition", part); got <= 0 || got > float64(p.Bytes) {
			t.Errorf("bytes in %v, log holds %d", got, p.Bytes)
		}
		// FlushSync: each append waited for an fsync, which was timed.
		if n, _ := value(fams, "folio_fsync_duration_seconds", "topic", "orders"); n < 1 {
			t.Errorf("fsync histogram count %v", n)
		}
	}
	if n, _ := value(fams, "folio_append_duration_seconds", "topic", "orders"); n < 2 || n > 10 {
		t.Errorf("append histogram count %v, want 2 to 10 appends", n)
	}
	if n, _ := value(fams, "folio_checkpoint_duration_seconds"); n != 1 {
		t.Errorf("checkpoint histogram count %v, want 1", n)
	}
	if n, _ := value(fams, "folio_checkpoints_total"); n != float64(st.Checkpoints) || n < 1 {
		t.Errorf("checkpoints_total %v, Stats %d", n, st.Checkpoints)
	}
	if got, ok := value(fams, "folio_open_files"); !ok || got != float64(st.OpenFiles) {
		t.Errorf("open files %v, Stats %d", got, st.OpenFiles)
	}
}

func TestGroupLagAndRebalances(t *testing.T) {
	b, _, reg := setup(t, nil)
	if _, err := b.CreateTopic("jobs", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "jobs", 1, 10)
	ctx := context.Background()
	gc, err := b.JoinGroup(ctx, "workers", []string{"jobs"}, &folio.GroupOptions{DisableAutoCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if err := gc.CommitOffsets(ctx, map[folio.TopicPartition]int64{{Topic: "jobs", Partition: 0}: 4}); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	labels := []string{"group", "workers", "topic", "jobs", "partition", "0"}
	if got, ok := value(fams, "folio_consumer_group_lag", labels...); !ok || got != 6 {
		t.Fatalf("lag %v (present %v), want 6", got, ok)
	}
	if got, _ := value(fams, "folio_consumer_group_committed_offset", labels...); got != 4 {
		t.Fatalf("committed %v, want 4", got)
	}
	if got, _ := value(fams, "folio_consumer_group_rebalances_total"); got < 1 {
		t.Fatalf("rebalances %v, want at least the join's", got)
	}
	if got, _ := value(fams, "folio_consumer_group_members"); got != 1 {
		t.Fatalf("members %v, want 1", got)
	}
	if err := gc.CommitOffsets(ctx, map[folio.TopicPartition]int64{{Topic: "jobs", Partition: 0}: 10}); err != nil {
		t.Fatal(err)
	}
	if got, _ := value(gather(t, reg), "folio_consumer_group_lag", labels...); got != 0 {
		t.Fatalf("lag after catching up %v, want 0", got)
	}
}

// DropPartitionLabel sums per topic and leaves out the offsets.
func TestDropPartitionLabel(t *testing.T) {
	b, _, reg := setup(t, &folioprom.Options{DropPartitionLabel: true})
	if _, err := b.CreateTopic("wide", folio.TopicConfig{Partitions: 8}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "wide", 8, 2)
	fams := gather(t, reg)
	if got, _ := value(fams, "folio_records_in_total", "topic", "wide"); got != 16 {
		t.Fatalf("records in %v, want 16", got)
	}
	var bytes float64
	for _, p := range b.Stats().Partitions {
		if p.Topic == "wide" {
			bytes += float64(p.Bytes)
		}
	}
	if got, _ := value(fams, "folio_log_size_bytes", "topic", "wide"); got != bytes {
		t.Fatalf("log size %v, want the sum %v", got, bytes)
	}
	if got, _ := value(fams, "folio_log_segments", "topic", "wide"); got != 8 {
		t.Fatalf("segments %v, want 8", got)
	}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "partition" {
					t.Fatalf("%s has a partition label", name)
				}
			}
		}
	}
	if _, ok := fams["folio_partition_high_watermark"]; ok {
		t.Fatal("per-partition offsets reported with DropPartitionLabel")
	}
}

// A deleted topic's series end at the next scrape.
func TestDeletedTopicPruned(t *testing.T) {
	b, _, reg := setup(t, nil)
	for _, name := range []string{"keep", "gone"} {
		if _, err := b.CreateTopic(name, folio.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
		produce(t, b, name, 1, 1)
	}
	if _, ok := value(gather(t, reg), "folio_records_in_total", "topic", "gone", "partition", "0"); !ok {
		t.Fatal("no series for gone before the delete")
	}
	if err := b.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	gather(t, reg) // prunes
	fams := gather(t, reg)
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "topic" && lp.GetValue() == "gone" {
					t.Fatalf("%s still has a series for the deleted topic", name)
				}
			}
		}
	}
	if _, ok := value(fams, "folio_records_in_total", "topic", "keep", "partition", "0"); !ok {
		t.Fatal("the kept topic's series went too")
	}
}

func TestCompactionRuns(t *testing.T) {
	b, _, reg := setup(t, nil)
	if _, err := b.CreateTopic("prices", folio.TopicConfig{Cleanup: topic.CleanupCompact, SegmentBytes: 200}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "prices", 1, 3)
	produce(t, b, "prices", 1, 3) // the same keys again: the first three are garbage
	if _, err := b.Compact(context.Background(), "prices", 0); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	// Compact's pass, and maybe the cleaner's own.
	if got, _ := value(fams, "folio_compaction_passes_total", "topic", "prices", "partition", "0"); got < 1 {
		t.Fatalf("compaction passes %v, want at least 1", got)
	}
	if got, _ := value(fams, "folio_compaction_records_removed_total", "topic", "prices", "partition", "0"); got < 1 {
		t.Fatalf("records removed %v", got)
	}
	// Compact's pass counts as the cleaner's; its worker may add more.
	if got, ok := value(fams, "folio_cleaner_passes_total"); !ok || got < 1 || got > float64(b.Stats().Cleaner.Passes) {
		t.Fatalf("cleaner passes %v (present %v), Stats now %d", got, ok, b.Stats().Cleaner.Passes)
	}
}

// Without a Broker attached, only the hook's metrics are reported.
func TestDetached(t *testing.T) {
	m := folioprom.New(nil)
	m.Appended("t", 0, 3, 100, 0)
	m.Consumed("t", 0, 2, 80)
	if n := testutil.CollectAndCount(m, "folio_records_in_total", "folio_records_out_total", "folio_log_size_bytes"); n != 2 {
		t.Fatalf("%d series, want records in and out only", n)
	}
}
