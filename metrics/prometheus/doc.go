// Package folioprom exports a folio.Broker's metrics to Prometheus
// (github.com/prometheus/client_golang).
//
// It lives in its own Go module, github.com/foliolog/folio/metrics/prometheus,
// so that an application importing only github.com/foliolog/folio never pulls
// in client_golang; its name is folioprom so that it can be imported beside
// client_golang's prometheus package.
//
// A Collector is two things: the Broker's metrics hook (folio.Metrics), which
// counts records and bytes in and out and times appends, fsyncs, blocked
// produce calls and checkpoints as they happen; and a prometheus.Collector,
// which adds at every scrape what the Broker's Stats and the consumer-group
// coordinator report (offsets, log sizes, segments, open files and mappings,
// group lag, rebalances, compaction runs):
//
//	m := folioprom.New(nil)
//	b, err := folio.Open(dir, &folio.Options{Metrics: m})
//	...
//	m.Attach(b)
//	reg.MustRegister(m)
//
// folio serve -http (cmd/folio) serves one at /metrics, on a registry of its
// own with client_golang's Go and process collectors.
//
// Names follow Prometheus' conventions: the folio_ prefix, base units
// (bytes, seconds), _total for counters, _seconds histograms. Labels are
// topic and partition (and group for group lag), never anything per
// record; Options.DropPartitionLabel sums per topic for topics with many
// partitions. Series of deleted topics are dropped at the next scrape.
//
// The metrics:
//
//	folio_records_in_total, folio_bytes_in_total          {topic, partition}  appended (bytes as stored)
//	folio_records_out_total, folio_bytes_out_total        {topic, partition}  handed to consumers and Kafka fetches
//	folio_append_failures_total                           {topic}
//	folio_append_duration_seconds                         {topic}             histogram, fsync wait included
//	folio_fsync_duration_seconds                          {topic}             histogram
//	folio_produce_blocked_duration_seconds                                    histogram: waits for buffer memory
//	folio_checkpoint_duration_seconds, folio_checkpoint_failures_total
//	folio_partition_log_start_offset, _high_watermark, _log_end_offset {topic, partition}  (not with DropPartitionLabel)
//	folio_log_size_bytes, folio_log_segments              {topic, partition}
//	folio_log_rolls_total, folio_log_index_rebuilds_total, folio_log_retention_errors_total {topic, partition}
//	folio_partition_failed                                {topic, partition}  1 while it refuses appends
//	folio_compaction_passes_total, folio_compaction_records_removed_total {topic, partition}
//	folio_cleaner_passes_total, folio_cleaner_failures_total                  the shared log cleaner's runs
//	folio_open_files, folio_mappings, folio_open_sealed_segments, folio_max_open_segments
//	folio_segment_evictions_total, folio_unclean_leader_elections_total       leaders elected from outside the ISR
//	folio_producers, folio_consumers, folio_checkpoints_total, folio_last_checkpoint_timestamp_seconds
//	folio_consumer_groups, folio_consumer_group_members
//	folio_consumer_group_rebalances_total, folio_consumer_group_commits_total,
//	folio_consumer_group_commit_errors_total, folio_consumer_group_members_expired_total
//	folio_consumer_group_lag                              {group, topic, partition}  records behind the high watermark
//	folio_consumer_group_committed_offset                 {group, topic, partition}  (not with DropPartitionLabel)
//
// Group lag comes from the Broker's coordinator, which exists once the
// Broker has __consumer_offsets; a read-only Broker reports none.
package folioprom
