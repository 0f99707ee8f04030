package folioprom

import (
	"sort"
	"strconv"

	"github.com/foliolog/folio"
	"github.com/prometheus/client_golang/prometheus"
)

// statDescs describe the metrics taken from Stats at each scrape.
type statDescs struct {
	logStart, highWatermark, logEnd                *prometheus.Desc
	logBytes, segments                             *prometheus.Desc
	rolls, indexRebuilds, retentionErrors, failed  *prometheus.Desc
	compactionPasses, compactionRemoved            *prometheus.Desc
	cleanerPasses, cleanerFailures                 *prometheus.Desc
	openFiles, mappings, openSealed, maxOpenSealed *prometheus.Desc
	evictions, producers, consumers                *prometheus.Desc
	uncleanElections                               *prometheus.Desc
	checkpoints, lastCheckpoint                    *prometheus.Desc
	groups, members, rebalances, commits           *prometheus.Desc
	commitErrors, expired                          *prometheus.Desc
	groupLag, groupCommitted                       *prometheus.Desc
}

func newStatDescs(o Options) statDescs {
	part := []string{"topic", "partition"}
	groupPart := []string{"group", "topic", "partition"}
	if o.DropPartitionLabel {
		part = []string{"topic"}
		groupPart = []string{"group", "topic"}
	}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, o.ConstLabels)
	}
	s := statDescs{
		logBytes:          d("folio_log_size_bytes", "Size of the partition's segment files.", part),
		segments:          d("folio_log_segments", "Segments of the partition.", part),
		rolls:             d("folio_log_rolls_total", "Segments rolled since Open.", part),
		indexRebuilds:     d("folio_log_index_rebuilds_total", "Indexes rebuilt from segment files since Open.", part),
		retentionErrors:   d("folio_log_retention_errors_total", "Scheduled retention passes that failed since Open.", part),
		failed:            d("folio_partition_failed", "Partitions refusing appends after a failed write or fsync.", part),
		compactionPasses:  d("folio_compaction_passes_total", "Compaction passes of the partition since Open.", part),
		compactionRemoved: d("folio_compaction_records_removed_total", "Records compaction removed since Open.", part),
		cleanerPasses:     d("folio_cleaner_passes_total", "Passes of the shared log cleaner that completed.", nil),
		cleanerFailures:   d("folio_cleaner_failures_total", "Passes of the shared log cleaner that failed.", nil),
		openFiles:         d("folio_open_files", "Segment files the process holds open for reading.", nil),
		mappings:          d("folio_mappings", "Segment mappings the process holds.", nil),
		openSealed:        d("folio_open_sealed_segments", "Sealed segments holding files now.", nil),
		maxOpenSealed:     d("folio_max_open_segments", "The cap on sealed segments holding files.", nil),
		evictions:         d("folio_segment_evictions_total", "Idle sealed segments closed to stay under the cap.", nil),
		uncleanElections:  d("folio_unclean_leader_elections_total", "Unclean leader elections that made this broker a partition's leader since Open.", nil),
		producers:         d("folio_producers", "Open producers.", nil),
		consumers:         d("folio_consumers", "Open consumers.", nil),
		checkpoints:       d("folio_checkpoints_total", "Checkpoint files written since Open.", nil),
		lastCheckpoint:    d("folio_last_checkpoint_timestamp_seconds", "When the last checkpoint file was written (Unix time).", nil),
		groups:            d("folio_consumer_groups", "Consumer groups the coordinator knows.", nil),
		members:           d("folio_consumer_group_members", "Members of all consumer groups.", nil),
		rebalances:        d("folio_consumer_group_rebalances_total", "Completed rebalances (new generations).", nil),
		commits:           d("folio_consumer_group_commits_total", "Committed offsets written.", nil),
		commitErrors:      d("folio_consumer_group_commit_errors_total", "Committed offsets whose write failed.", nil),
		expired:           d("folio_consumer_group_members_expired_total", "Members removed for missing a deadline.", nil),
		groupLag:          d("folio_consumer_group_lag", "Records between the group's committed offset and the high watermark.", groupPart),
	}
	if !o.DropPartitionLabel {
		s.logStart = d("folio_partition_log_start_offset", "First offset a consumer can read.", part)
		s.highWatermark = d("folio_partition_high_watermark", "Offset below which records are visible to consumers.", part)
		s.logEnd = d("folio_partition_log_end_offset", "Offset the next record gets.", part)
		s.groupCommitted = d("folio_consumer_group_committed_offset", "The group's committed offset (-1: none).", groupPart)
	}
	return s
}

func (s *statDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		s.logStart, s.highWatermark, s.logEnd, s.logBytes, s.segments, s.rolls, s.indexRebuilds,
		s.retentionErrors, s.failed, s.compactionPasses, s.compactionRemoved, s.cleanerPasses,
		s.cleanerFailures, s.openFiles, s.mappings, s.openSealed, s.maxOpenSealed, s.evictions,
		s.uncleanElections,
		s.producers, s.consumers, s.checkpoints, s.lastCheckpoint, s.groups, s.members, s.rebalances,
		s.commits, s.commitErrors, s.expired, s.groupLag, s.groupCommitted,
	}
}

func (s *statDescs) describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.all() {
		if d != nil {
			ch <- d
		}
	}
}

// partSums are one label set's values: a partition's, or a topic's sums.
type partSums struct {
	labels                                   []string
	bytes, segments, rolls, rebuilds, retErr float64
	failed, cmpPasses, cmpRemoved            float64
}

func (c *Collector) collectStats(ch chan<- prometheus.Metric, b *folio.Broker, st folio.Stats) {
	d := &c.descs
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
	}
	var sums []*partSums
	byTopic := map[string]*partSums{}
	for _, p := range st.Partitions {
		var s *partSums
		if c.opts.DropPartitionLabel {
			if s = byTopic[p.Topic]; s == nil {
				s = &partSums{labels: []string{p.Topic}}
				byTopic[p.Topic] = s
				sums = append(sums, s)
			}
		} else {
			labels := []string{p.Topic, strconv.Itoa(int(p.Partition))}
			s = &partSums{labels: labels}
			sums = append(sums, s)
			gauge(d.logStart, float64(p.LogStartOffset), labels...)
			gauge(d.highWatermark, float64(p.HighWatermark), labels...)
			gauge(d.logEnd, float64(p.LogEndOffset), labels...)
		}
		s.bytes += float64(p.Bytes)
		s.segments += float64(p.Segments)
		s.rolls += float64(p.Rolls)
		s.rebuilds += float64(p.IndexRebuilds)
		s.retErr += float64(p.RetentionErrors)
		if p.Failed {
			s.failed++
		}
		s.cmpPasses += float64(p.Compaction.Passes)
		s.cmpRemoved += float64(p.Compaction.RecordsRemoved)
	}
	for _, s := range sums {
		gauge(d.logBytes, s.bytes, s.labels...)
		gauge(d.segments, s.segments, s.labels...)
		counter(d.rolls, s.rolls, s.labels...)
		counter(d.indexRebuilds, s.rebuilds, s.labels...)
		counter(d.retentionErrors, s.retErr, s.labels...)
		gauge(d.failed, s.failed, s.labels...)
		counter(d.compactionPasses, s.cmpPasses, s.labels...)
		counter(d.compactionRemoved, s.cmpRemoved, s.labels...)
	}

	counter(d.cleanerPasses, float64(st.Cleaner.Passes))
	counter(d.cleanerFailures, float64(st.Cleaner.Failures))
	gauge(d.openFiles, float64(st.OpenFiles))
	gauge(d.mappings, float64(st.Mappings))
	gauge(d.openSealed, float64(st.OpenSealedSegments))
	gauge(d.maxOpenSealed, float64(st.MaxOpenSegments))
	counter(d.evictions, float64(st.Evictions))
	counter(d.uncleanElections, float64(st.UncleanElections))
	gauge(d.producers, float64(st.Producers))
	gauge(d.consumers, float64(st.Consumers))
	counter(d.checkpoints, float64(st.Checkpoints))
	if !st.LastCheckpoint.IsZero() {
		gauge(d.lastCheckpoint, float64(st.LastCheckpoint.UnixNano())/1e9)
	}
	g := st.Groups
	gauge(d.groups, float64(g.Groups))
	gauge(d.members, float64(g.Members))
	counter(d.rebalances, float64(g.Rebalances))
	counter(d.commits, float64(g.Commits))
	counter(d.commitErrors, float64(g.CommitErrors))
	counter(d.expired, float64(g.Expired))
	if g.Groups > 0 { // the coordinator exists: asking it creates nothing
		c.collectGroupLag(ch, b)
	}
}

// collectGroupLag reports every group's lag per partition (per topic with
// DropPartitionLabel). Errors leave the group out of this scrape.
func (c *Collector) collectGroupLag(ch chan<- prometheus.Metric, b *folio.Broker) {
	coord, err := b.GroupCoordinator()
	if err != nil {
		return
	}
	ctx, cancel := c.groupLagContext()
	defer cancel()
	groups, err := coord.ListGroups(ctx)
	if err != nil {
		return
	}
	ids := make([]string, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, g.Group)
	}
	sort.Strings(ids)
	d := &c.descs
	for _, id := range ids {
		lags, err := b.GroupLag(id)
		if err != nil {
			continue
		}
		if c.opts.DropPartitionLabel {
			byTopic := map[string]float64{}
			var order []string
			for _, l := range lags {
				if _, ok := byTopic[l.Topic]; !ok {
					order = append(order, l.Topic)
				}
				byTopic[l.Topic] += float64(l.Lag)
			}
			for _, t := range order {
				ch <- prometheus.MustNewConstMetric(d.groupLag, prometheus.GaugeValue, byTopic[t], id, t)
			}
			continue
		}
		for _, l := range lags {
			labels := []string{id, l.Topic, strconv.Itoa(int(l.Partition))}
			ch <- prometheus.MustNewConstMetric(d.groupLag, prometheus.GaugeValue, float64(l.Lag), labels...)
			ch <- prometheus.MustNewConstMetric(d.groupCommitted, prometheus.GaugeValue, float64(l.Committed), labels...)
		}
	}
}
