package folio

import (
	"sort"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
)

// Stats is a snapshot of a Broker's state. Counters are cumulative since
// Open.
type Stats struct {
	Dir      string
	ReadOnly bool
	// Partitions lists every partition of every topic, by topic and
	// partition.
	Partitions []PartitionStats

	// OpenFiles and Mappings count the segment files and mappings the
	// process holds open for reading (all Brokers of the process together:
	// the read paths count per process).
	OpenFiles, Mappings int64
	// OpenSealedSegments is how many segments hold files now, under the
	// cap MaxOpenSegments: sealed ones and, since the cap covers them too,
	// active ones (the name is older). Evictions counts idle ones closed to
	// stay under it.
	OpenSealedSegments int
	MaxOpenSegments    int
	Evictions          int64

	// Producers and Consumers count the open clients.
	Producers, Consumers int
	// ProduceBlocked counts produce calls that waited for buffer memory.
	ProduceBlocked int64

	// UncleanElections counts the unclean leader elections (a replica
	// outside the ISR elected, ClusterOptions.UncleanLeaderElection) that
	// made this Broker a partition's leader since Open; zero without
	// ClusterOptions.
	UncleanElections int64

	// Checkpoints counts checkpoint files written; LastCheckpoint is when
	// the last one was (zero if none yet).
	Checkpoints    int64
	LastCheckpoint time.Time

	// Cleaner gives the counters of the log cleaner the compacted topics
	// share: registered partitions, passes, and failed passes with the last
	// error, which nothing else reports (the cleaner retries a failed
	// partition after its CheckInterval). Zero for a read-only Broker.
	Cleaner log.CleanerStats

	// Groups are the consumer-group coordinator's counters (all zero before
	// the first group call of a Broker without an offsets topic). Per group
	// and partition lag: GroupLag.
	Groups group.Stats
}

// PartitionStats describes one partition.
type PartitionStats struct {
	Topic     string
	Partition int32
	// LogStartOffset, HighWatermark, DurableEndOffset and LogEndOffset are
	// the partition's offsets: the first readable one, the end of what
	// consumers see, the end of what is fsynced, and the next to append.
	LogStartOffset, HighWatermark, DurableEndOffset, LogEndOffset int64
	// Bytes is the size of the partition's segment files (.log).
	Bytes int64
	// Segments is the number of segments; OpenSealedSegments how many
	// sealed ones hold files now (the active one always does).
	Segments           int
	OpenSealedSegments int64
	// RecordsOut counts records handed to consumers since Open: polled by
	// the Broker's Consumers and GroupConsumers, and fetched by Kafka
	// clients through a transport.Server on this Broker (folio serve).
	// BytesOut counts the bytes of the batches they came from. Zero for
	// what another process reads (a read-only Broker sees only its own
	// readers).
	RecordsOut, BytesOut int64
	// Syncs counts fsyncs of the partition's log (group commits, seals);
	// Rolls counts new segments since Open.
	Syncs, Rolls int64
	// Fsync gives the durations of the partition's file fsyncs.
	Fsync FsyncStats
	// IndexRebuilds counts indexes rebuilt from the segment files because
	// one was missing or damaged; RetentionErrors counts scheduled
	// retention passes that failed.
	IndexRebuilds, RetentionErrors int64
	// Compaction gives the partition's compaction counters since Open and
	// its cleaner checkpoint; zero for a topic that does not compact.
	Compaction log.CompactionStats
	// Failed is set once the partition refuses appends after a failed
	// write or fsync; Close and Open recover it.
	Failed bool
	// Producers is the number of idempotent producers the partition holds
	// state for (0 until the first idempotent append of the session).
	Producers int
	// Consumers gives every consumer assigned the partition, with its lag.
	Consumers []ConsumerLag
}

// ConsumerLag is one consumer's progress in a partition.
type ConsumerLag struct {
	Consumer string
	Position int64
	// Lag is the high watermark minus the position.
	Lag int64
}

// Stats returns a snapshot of the Broker's state.
func (b *Broker) Stats() Stats {
	st := Stats{Dir: b.dir, ReadOnly: b.readOnly, Groups: b.GroupStats()}
	st.OpenFiles, st.Mappings = readpath.Stats()
	cs := b.caps.Stats()
	st.OpenSealedSegments, st.MaxOpenSegments, st.Evictions = cs.OpenSegments, cs.MaxOpenSegments, cs.Evictions
	st.Checkpoints = b.checkpoints.Load()
	if ns := b.lastCheckpoint.Load(); ns != 0 {
		st.LastCheckpoint = time.Unix(0, ns)
	}
	st.ProduceBlocked = b.producerBlock.Load()
	if b.cluster != nil {
		st.UncleanElections = b.cluster.uncleanElections.Load()
	}
	if b.cleaner != nil {
		st.Cleaner = b.cleaner.Stats()
	}

	b.clientsMu.Lock()
	st.Producers = len(b.producers)
	st.Consumers = len(b.consumers)
	lags := map[*brokerPart][]ConsumerLag{}
	for c := range b.consumers {
		c.assignMu.Lock()
		for _, ap := range c.order {
			lags[ap.p] = append(lags[ap.p], ConsumerLag{Consumer: c.name, Position: ap.pos})
		}
		c.assignMu.Unlock()
	}
	b.clientsMu.Unlock()

	for _, p := range b.allPartitions() {
		ls := p.Log().Stats()
		cp := p.Checkpoint()
		recordsOut, bytesOut := p.Out()
		ps := PartitionStats{
			Topic: p.Topic(), Partition: p.Index(),
			LogStartOffset:     cp.LogStartOffset,
			HighWatermark:      p.HighWatermark(),
			DurableEndOffset:   cp.RecoveryPoint,
			LogEndOffset:       p.LogEndOffset(),
			Bytes:              ls.Bytes,
			RecordsOut:         recordsOut,
			BytesOut:           bytesOut,
			Segments:           ls.Segments,
			OpenSealedSegments: ls.OpenSealedSegments,
			Syncs:              ls.Syncs,
			Rolls:              ls.Rolls,
			Fsync:              p.syncs.stats(),
			IndexRebuilds:      ls.IndexRebuilds,
			RetentionErrors:    ls.RetentionErrors,
			Failed:             p.Failed(),
			Producers:          p.Producers(),
			Consumers:          lags[p],
		}
		if p.Config().Cleanup.Compacts() {
			ps.Compaction = p.Log().CompactionStats()
		}
		for i := range ps.Consumers {
			ps.Consumers[i].Lag = max(ps.HighWatermark-ps.Consumers[i].Position, 0)
		}
		sort.Slice(ps.Consumers, func(i, j int) bool { return ps.Consumers[i].Consumer < ps.Consumers[j].Consumer })
		st.Partitions = append(st.Partitions, ps)
	}
	sort.Slice(st.Partitions, func(i, j int) bool {
		a, c := st.Partitions[i], st.Partitions[j]
		if a.Topic != c.Topic {
			return a.Topic < c.Topic
		}
		return a.Partition < c.Partition
	})
	return st
}
