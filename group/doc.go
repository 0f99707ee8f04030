// Package group implements consumer groups: a coordinator with the
// semantics of Kafka's classic group protocol, in-process members that
// consume through it, the range, round-robin and cooperative-sticky
// assignors, and committed offsets stored as records of the internal topic
// __consumer_offsets.
//
// # The coordinator
//
// A Coordinator serves every group of a Broker. Its methods are Kafka's
// group APIs with the same fields and the same error codes (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// OffsetDelete, DescribeGroups, ListGroups, DeleteGroups), so the Kafka
// endpoint can expose it to Kafka clients unchanged, and in-process
// members use it directly. A group moves through Kafka's states:
//
//	Empty --join--> PreparingRebalance --all joined or rebalance timeout-->
//	CompletingRebalance --leader's SyncGroup--> Stable --join, leave,
//	expiry, leader rejoin--> PreparingRebalance ... --last member gone--> Empty
//	Empty --DeleteGroups--> Dead
//
// Members get ids (a new dynamic member first gets MEMBER_ID_REQUIRED with
// its id, KIP-394), each completed join starts a generation, the leader
// member receives every member's metadata and computes the assignment, and
// the others receive their share through SyncGroup. A member that sends no
// heartbeat for its session timeout is removed; one that does not rejoin
// within the rebalance timeout, or does not sync within it after the join,
// is removed too. Static members (group.instance.id, KIP-345) keep their
// identity across restarts: a new process with the same instance id takes
// the member's place and assignment without a rebalance, and the old one
// is fenced (FENCED_INSTANCE_ID).
//
// Every heartbeat, commit and fetch carries the member id and generation
// and is refused once stale (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID), so a member the group has moved past (a zombie)
// cannot overwrite its successor's commits. Commits are ordered against
// the events that fence members: a commit that passed its check is durable
// before any member is removed or a generation starts.
//
// Errors that Kafka reports with a code are franz-go's *kerr.Error values
// (ErrUnknownMemberID is kerr.UnknownMemberID, and so on), wrapped with the
// group, member or partition; errors.Is matches them, and errs.Kafka gives
// the code a Kafka endpoint answers with.
//
// # Members
//
// Join makes an in-process Member that reads records through a Reader,
// the Broker's plain Consumer in the root package, so a group consumer
// has the same Poll and Records as a plain one. The member heartbeats on
// its own goroutine and, like Kafka's consumer, does the group's work
// inside Poll on the application's goroutine: rebalances, the leader's
// assignment, the OnAssigned, OnRevoked and OnLost callbacks, auto-commit.
// It learns of a rebalance at once (the coordinator wakes its in-process
// members, and a Poll that waits for records is interrupted), not only at
// its next heartbeat.
//
// In a partition the group has no committed offset for, a member starts
// where its ResetPolicy says: by default (ResetEarliest, the zero value)
// at the log start offset, so a group that joins after records were
// produced reads them, as franz-go's and kafka-go's consumers do (Java
// Kafka's default is latest; choose ResetLatest for that).
//
// With cooperative-sticky (the default) members keep their partitions
// through a rebalance; a partition that must move is revoked from its
// owner in one rebalance and given to its new owner in the next, after the
// owner released it or was expelled (KIP-429), so no partition is ever
// owned by two live members. The owner's rejoin after revoking starts the
// second rebalance; should it never come (a static member's process
// restarted in between), the leader starts it once the withheld partitions
// stayed unassigned for a heartbeat interval, and the coordinator
// rebalances at once when a static member restarts owing a revocation.
// The eager assignors (range, roundrobin) revoke everything before each
// rebalance.
//
// Delivery is at-least-once by default: auto-commit commits what the
// application finished (the records of the previous Poll, or of the
// Records loop bodies that returned), before partitions are revoked and
// at Close. Commit commits everything handed out so far, and
// CommitOffsets chosen offsets; both return once durable.
//
// # Committed offsets
//
// Commits are records of __consumer_offsets in Kafka's format (key
// OffsetCommitKey v1 = group, topic, partition; value OffsetCommitValue v3
// = offset, leader epoch, metadata, commit timestamp; a null value is a
// tombstone, written when a group or an offset is deleted). A group's
// records go to partition PartitionFor(group, n), Kafka's
// abs(groupId.hashCode()) % n with Java's String.hashCode. The topic is
// compacted (cleanup.policy=compact) and written under FlushSync, so an
// acknowledged commit survives a power cut; concurrent commits share
// fsyncs (the log's group commit).
//
// # Group metadata
//
// A group's membership is written to the topic too, so that a reader of
// the files (folio groups, a Kafka tool) sees it beside the running
// application: a record with key GroupMetadataKey v2 (= group; the key
// version differs from an offset key's, so compaction never confuses the
// two) and value GroupMetadataValue v3 (= protocol type, generation,
// protocol, leader, state timestamp, and per member its member id, group
// instance id, client id and host, rebalance and session timeouts,
// subscription and assignment bytes), in the group's partition. It is
// written when the leader's SyncGroup completes a generation (before any
// member hears its assignment), when a static member's restart takes over
// its old member id, and when the group becomes Empty (members and
// protocol then absent); DeleteGroups writes a tombstone. The latest
// record of a group is its membership. The writes are best effort: a
// failed one is logged and counted (Stats().MetadataErrors) and does not
// fail the rebalance. They run under the group's lock, so a group's
// requests wait out one append per rebalance.
//
// NewCoordinator loads every partition of the topic before it serves. A
// committed offset beyond its partition's log end, meaning that records
// the group had consumed were lost afterwards (a power cut under a flush
// policy other than FlushSync), is clamped to the log end, durably, and
// reported (Logger and Stats().Clamped), so that the records written next
// at those offsets are not skipped. A damaged batch in a partition of a
// Store that is a Truncater (LogStore is) is cut, with every later record
// of that partition, as a crash would have cut it, and reported to the
// Logger with the damage (an *errs.Corruption); the commits before it are
// kept, so a directory that holds a valid prefix always opens. Lag reports, per partition, how far a
// group's committed offset trails the high watermark.
//
// # Wiring it into a Broker
//
// The package sits below the root package and does not import it. The
// Broker provides:
//
//   - a Store over the partition logs of __consumer_offsets: LogStore(logs)
//     with the topic's *log.Log per partition, in partition order. The
//     Broker creates the topic as an internal topic on first use, with
//     cleanup policy compact, FlushSync, retention unlimited and 100 MiB
//     segments (Kafka's offsets.topic.segment.bytes), with 50 partitions
//     (Kafka's offsets.topic.num.partitions) unless configured otherwise; the
//     partition count is fixed once the topic exists.
//   - a Topics view answering partition counts and offsets (log start, high
//     watermark, log end) of the data topics.
//   - a Reader for each member: Assign and Unassign on its plain Consumer,
//     its Poll, and Locate returning a record's topic, partition and offset.
//     The Consumer's reset policy should match the member's (for positions
//     that fall out of range).
//
// It makes one Coordinator with NewCoordinator when it opens, after its
// topics are open, and closes it (after closing the members) before the
// logs close.
//
// # Caveats
//
//   - Members are not restored at load, unlike Kafka's coordinator: the
//     in-process members died with the process that ran them. After a
//     restart every group is Empty with its offsets, and its generations
//     continue from its latest metadata record. A group whose record still
//     listed members (the process stopped without them leaving) gets an
//     Empty record at load, so readers of the topic see it Empty too; until
//     then (no process open) they see the members of the last generation.
//   - Offsets do not expire (Kafka's offsets.retention.minutes); delete a
//     group or its offsets to drop them.
//   - The group package does not fence fetches of Kafka clients (the
//     classic protocol has no group fields in Fetch); in-process members
//     fence their own with ValidateGeneration before and after each fetch.
//   - Transactional offset commits (TxnOffsetCommit) and the KIP-848
//     consumer protocol are not implemented.
package group
