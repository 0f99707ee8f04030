package replica

import (
	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors. Errors returned by this package wrap them (test with
// errors.Is) together with the partition they concern; each also matches
// its Kafka code (errs.Kafka).
var (
	// ErrNotLeader is returned to an append or a follower's fetch on a
	// replica that does not lead the partition in the asked epoch, or has
	// been fenced by a newer epoch. An append refused with it wrote
	// nothing (definite); an acknowledgement ended by it is indeterminate
	// (wrapped in partition.ErrUnknownOutcome).
	ErrNotLeader = errs.New("replica: not the leader", kerr.NotLeaderForPartition)

	// ErrNotEnoughReplicas refuses an append before it is written: the ISR
	// is smaller than min.insync.replicas. Nothing is written: a definite
	// failure.
	ErrNotEnoughReplicas = errs.New("replica: not enough in-sync replicas", kerr.NotEnoughReplicas)

	// ErrNotEnoughReplicasAfterAppend ends an acks=all wait: the records are
	// in the leader's log, but the ISR shrank below min.insync.replicas
	// before the high watermark passed them. The outcome is indeterminate:
	// they may yet be committed, or truncated away.
	ErrNotEnoughReplicasAfterAppend = errs.New("replica: not enough in-sync replicas after the append", kerr.NotEnoughReplicasAfterAppend)

	// ErrFencedLeaderEpoch answers a fetch whose current leader epoch is
	// older than the leader's (KIP-320): the follower must refresh its
	// metadata.
	ErrFencedLeaderEpoch = errs.New("replica: fenced leader epoch", kerr.FencedLeaderEpoch)

	// ErrUnknownLeaderEpoch answers a fetch whose current leader epoch is
	// newer than the leader's: the leader has not learnt of it yet.
	ErrUnknownLeaderEpoch = errs.New("replica: unknown leader epoch", kerr.UnknownLeaderEpoch)

	// ErrStaleVersion refuses a compare-and-swap on a partition's state
	// whose expected version is not the current one: someone else changed
	// it first. The caller rereads the state and decides again.
	ErrStaleVersion = errs.New("replica: partition state changed meanwhile", kerr.InvalidUpdateVersion)

	// ErrStaleIncarnation refuses an ISR expansion naming a replica by an
	// incarnation (broker epoch) that is not its current one: it restarted
	// since, possibly without its unsynced tail (KIP-903).
	ErrStaleIncarnation = errs.New("replica: stale replica incarnation", kerr.StaleBrokerEpoch)

	// ErrIneligibleReplica refuses an ISR expansion naming a broker that
	// has no live session with the controller (its session ended or
	// lapsed: fenced, as after a pause or before a controlled shutdown's
	// end): it may not rejoin until it heartbeats again (KIP-841).
	ErrIneligibleReplica = errs.New("replica: ineligible replica", kerr.IneligibleReplica)

	// ErrNotReplica refuses a fetch from a broker that is not one of the
	// partition's replicas.
	ErrNotReplica = errs.New("replica: not a replica of the partition", kerr.ReplicaNotAvailable)

	// ErrFetchOutOfRange refuses a follower's fetch at an offset beyond
	// the leader's log end (or below 0): the follower reconciles again.
	ErrFetchOutOfRange = errs.New("replica: follower fetch offset out of range", kerr.OffsetOutOfRange)

	// ErrUnknownPartition is returned by the metadata for a partition it
	// does not know.
	ErrUnknownPartition = errs.New("replica: unknown partition", kerr.UnknownTopicOrPartition)

	// ErrNotEligible refuses an election of a replica outside the ISR
	// while unclean election is not allowed.
	ErrNotEligible = errs.New("replica: no eligible leader", kerr.EligibleLeadersNotAvailable)
)
