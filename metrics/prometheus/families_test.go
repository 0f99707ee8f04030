package folioprom_test

import (
	"context"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	folioprom "github.com/foliolog/folio/metrics/prometheus"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/topic"
	dto "github.com/prometheus/client_model/go"
)

// issueFamilies are the metric families issue 16 names, with their type
// and labels: records and bytes in and out per topic (and partition),
// append and fsync latency histograms, segments, open files and mappings,
// log sizes, consumer-group lag per partition, rebalances, compaction runs.
var issueFamilies = []struct {
	name   string
	typ    dto.MetricType
	labels []string // with the partition label; DropPartitionLabel drops it
}{
	{"folio_records_in_total", dto.MetricType_COUNTER, []string{"topic", "partition"}},
	{"folio_bytes_in_total", dto.MetricType_COUNTER, []string{"topic", "partition"}},
	{"folio_records_out_total", dto.MetricType_COUNTER, []string{"topic", "partition"}},
	{"folio_bytes_out_total", dto.MetricType_COUNTER, []string{"topic", "partition"}},
	{"folio_append_duration_seconds", dto.MetricType_HISTOGRAM, []string{"topic"}},
	{"folio_fsync_duration_seconds", dto.MetricType_HISTOGRAM, []string{"topic"}},
	{"folio_log_segments", dto.MetricType_GAUGE, []string{"topic", "partition"}},
	{"folio_log_size_bytes", dto.MetricType_GAUGE, []string{"topic", "partition"}},
	{"folio_open_files", dto.MetricType_GAUGE, nil},
	{"folio_mappings", dto.MetricType_GAUGE, nil},
	{"folio_consumer_group_lag", dto.MetricType_GAUGE, []string{"group", "topic", "partition"}},
	{"folio_consumer_group_rebalances_total", dto.MetricType_COUNTER, nil},
	{"folio_compaction_passes_total", dto.MetricType_COUNTER, []string{"topic", "partition"}},
}

// TestIssueFamilies: against a live Broker with a compacted topic, an mmap
// read and a consumer group, every family the issue names is gathered with
// its type and labels, with and without DropPartitionLabel; bytes out are
// the bytes of the batches a consumer read, and mappings and open files
// are the Broker's; no family has a label beyond topic, partition and
// group.
func TestIssueFamilies(t *testing.T) {
	for _, drop := range []bool{false, true} {
		b, _, reg := setup(t, &folioprom.Options{DropPartitionLabel: drop})
		cfg := folio.TopicConfig{Cleanup: topic.CleanupCompact, ReadPath: readpath.Mmap}
		if _, err := b.CreateTopic("prices", cfg); err != nil {
			t.Fatal(err)
		}
		produce(t, b, "prices", 1, 3)
		produce(t, b, "prices", 1, 3)
		ctx := context.Background()
		if _, err := b.Compact(ctx, "prices", 0); err != nil {
			t.Fatal(err)
		}
		var size float64
		for _, p := range b.Stats().Partitions {
			if p.Topic == "prices" {
				size = float64(p.Bytes)
			}
		}
		c, err := b.NewConsumer(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Assign(folio.Assignment{Topic: "prices", Partition: 0}); err != nil {
			t.Fatal(err)
		}
		// Read to the end: every batch the partition holds is read once.
		for read := int64(0); read < 6; {
			recs, err := c.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) > 0 {
				read = recs[len(recs)-1].Offset + 1
			}
		}
		gc, err := b.JoinGroup(ctx, "billing", []string{"prices"}, &folio.GroupOptions{DisableAutoCommit: true})
		if err != nil {
			t.Fatal(err)
		}
		fams := gather(t, reg)
		st := b.Stats()
		for _, f := range issueFamilies {
			mf := fams[f.name]
			if mf == nil {
				t.Errorf("drop %v: %s missing", drop, f.name)
				continue
			}
			if mf.GetType() != f.typ {
				t.Errorf("drop %v: %s is a %v, want a %v", drop, f.name, mf.GetType(), f.typ)
			}
			want := map[string]bool{}
			for _, l := range f.labels {
				want[l] = !drop || l != "partition"
			}
			for _, m := range mf.GetMetric() {
				have := map[string]bool{}
				for _, lp := range m.GetLabel() {
					have[lp.GetName()] = true
					if !want[lp.GetName()] {
						t.Errorf("drop %v: %s has label %s", drop, f.name, lp.GetName())
					}
				}
				for l, w := range want {
					if w && !have[l] {
						t.Errorf("drop %v: %s lacks label %s", drop, f.name, l)
					}
				}
			}
		}
		// Cardinality: no family, named or not, has a label beyond topic,
		// partition and group (none per record); with DropPartitionLabel
		// none has partition.
		for name, mf := range fams {
			if !strings.HasPrefix(name, "folio_") {
				t.Errorf("drop %v: %s lacks the folio_ prefix", drop, name)
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if l := lp.GetName(); (l != "topic" && l != "partition" && l != "group") || (drop && l == "partition") {
						t.Errorf("drop %v: %s has label %s", drop, name, l)
					}
				}
			}
		}
		labels := []string{"topic", "prices", "partition", "0"}
		if drop {
			labels = labels[:2]
		}
		if got, _ := value(fams, "folio_bytes_out_total", labels...); got != size {
			t.Errorf("drop %v: bytes out %v, the consumer read the whole log of %v bytes", drop, got, size)
		}
		if got, ok := value(fams, "folio_mappings"); !ok || got != float64(st.Mappings) || got < 1 {
			t.Errorf("drop %v: mappings %v (present %v), Stats %d, after an mmap read", drop, got, ok, st.Mappings)
		}
		if got, ok := value(fams, "folio_open_files"); !ok || got != float64(st.OpenFiles) {
			t.Errorf("drop %v: open files %v (present %v), Stats %d", drop, got, ok, st.OpenFiles)
		}
		if got, _ := value(fams, "folio_consumer_group_lag", append([]string{"group", "billing"}, labels...)...); got != 6 {
			t.Errorf("drop %v: lag %v of a group with no committed offset on 6 offsets", drop, got)
		}
		if err := gc.CommitOffsets(ctx, map[folio.TopicPartition]int64{{Topic: "prices", Partition: 0}: 6}); err != nil {
			t.Fatal(err)
		}
		if got, _ := value(gather(t, reg), "folio_consumer_group_lag", append([]string{"group", "billing"}, labels...)...); got != 0 {
			t.Errorf("drop %v: lag %v after committing the end", drop, got)
		}
		if err := gc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
