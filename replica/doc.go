// Package replica is Kafka's leader/follower replication of a partition
// between Folio brokers: the data path, against a metadata interface.
//
// # Model
//
// A partition's replication state (State: replicas, leader, leader
// epoch, ISR with each member's incarnation, version) lives in the
// cluster's metadata (Metadata). Every change is a compare-and-swap on the
// state's Version: a leader changes only its ISR (AlterISR), the
// controller elects leaders (a new leader epoch each time). Mem is an
// in-memory Metadata that also plays the controller; a Raft-backed one
// comes next.
//
// A Leader is one replica's leadership of one partition in one epoch. It
// records each follower's fetches (Fetched: the follower's log end and
// when it last had everything the leader held), shrinks the ISR of
// followers that lag more than LagTime (Tick), readmits a follower that
// reaches the high watermark once the high watermark is inside the
// epoch, and computes the high watermark: the least log end over the
// maximal ISR (committed ∪ pending change), only forward, only while the
// ISR has MinInsyncReplicas members, and none at all until it reaches the
// epoch's start (the leader's log end when it was elected), so a new
// leader never exposes a high watermark it has not established itself.
//
// Incarnations (broker epochs, rising at every restart) keep a replica
// that may have lost its unflushed tail out of the ISR until it has
// caught up again (KIP-903): the metadata refuses to readmit an old
// incarnation, the leader proposes out a member fetching under a new one
// and refuses fetches sent under an older one. A new leader has its log
// stamp its batches with its epoch.
//
// A Follower is a broker's follower side over the Kafka endpoint: one
// fetch loop and one franz-go client per leader broker, reconciling each
// partition by epoch lineage (OffsetForLeaderEpoch) before it fetches,
// truncating at a DivergingEpoch, appending with the leader's offsets and
// epochs, and taking its high watermark from the leader's. Its doc says
// which crashes each flush policy survives. The leader's side of the wire
// is the transport package's (a ReplicaBackend whose PartitionLeader is a
// Leader).
//
// A Leader is a partition.Replication: with acks=all (the default) an
// append waits until the high watermark passes it. Hook is what a broker
// opens a replicated partition with: it forwards to the current Leader
// and refuses appends on a follower.
//
// # Outcomes
//
// ErrNotEnoughReplicas and ErrNotLeader from BeforeAppend are definite:
// nothing was written. ErrNotEnoughReplicasAfterAppend, ErrNotLeader from
// AfterAppend, and ctx's deadline are indeterminate (the partition wraps
// them in partition.ErrUnknownOutcome): the records are in the leader's
// log and may yet be committed, or be truncated away by a new leader. An
// idempotent producer's retry is safe either way.
//
// # Caveats
//
//   - The simulator models the follower's side on an in-memory log; the
//     Follower runs it over the real log and the Kafka endpoint
//     (replnet_test.go in the root package, two brokers on loopback).
//   - partition.Replication's BeforeAppend does not see the append's
//     acks, so the min.insync.replicas check applies to acks=1 appends
//     too (stricter than Kafka).
package replica
