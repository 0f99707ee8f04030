package group

import (
	"strconv"
	"time"
)

// The requests and responses of the classic group protocol, as plain structs
// whose fields mirror Kafka's JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and
// DeleteGroups messages (timeouts as time.Duration instead of milliseconds,
// a nullable string as ""). A request-level error is the method's error,
// carrying a *kerr.Error (errs.Kafka gives the code to answer with);
// per-member and per-partition errors sit in the response, as in Kafka.

// ProtocolTypeConsumer is the protocol type of Kafka consumers, whose
// member metadata and assignments are Kafka's ConsumerProtocol encodings.
// In-process members use it, so they and Kafka clients can share a group.
const ProtocolTypeConsumer = "consumer"

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// String returns "<topic>-<partition>@<offset>" (without it, the embedded
// TopicPartition's String would print the partition alone).
func (s StartOffset) String() string {
	return s.TopicPartition.String() + "@" + strconv.FormatInt(s.Offset, 10)
}

// State is a group's state in the classic protocol.
type State uint8

const (
	// StateEmpty: no members; the group may hold committed offsets.
	StateEmpty State = iota
	// StatePreparingRebalance: waiting for the members to (re)join.
	StatePreparingRebalance
	// StateCompletingRebalance: joined; waiting for the leader's assignment
	// (Kafka's AwaitingSync).
	StateCompletingRebalance
	// StateStable: every member has its assignment for the generation.
	StateStable
	// StateDead: the group was deleted; the coordinator forgets it.
	StateDead
)

// String returns Kafka's name of the state, as DescribeGroups reports it.
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// JoinGroupRequest asks to join a group, or to rejoin it for the next
// generation.
type JoinGroupRequest struct {
	Group string
	// SessionTimeout: a member that sends no heartbeat for this long is
	// removed. It must lie within the coordinator's Min/MaxSessionTimeout.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds how long the coordinator waits for members
	// to rejoin during a rebalance (Kafka clients send
	// max.poll.interval.ms). Zero means SessionTimeout (JoinGroup v0).
	RebalanceTimeout time.Duration
	// MemberID is "" on a member's first join.
	MemberID string
	// InstanceID is group.instance.id, set by static members; "" is null.
	InstanceID string
	// ProtocolType is the kind of group, ProtocolTypeConsumer for consumers.
	ProtocolType string
	// Protocols lists the member's assignors, most preferred first, each
	// with the member's metadata for it.
	Protocols []JoinGroupProtocol
	// RequireKnownMemberID makes a new dynamic member first get its member
	// id back with ErrMemberIDRequired and join again with it, as Kafka
	// does from JoinGroup v4 on. In-process members set it.
	RequireKnownMemberID bool
	// Reason says why the member (re)joins, for the log (v8).
	Reason string
	// ClientID and ClientHost describe the member in DescribeGroups; the
	// client id prefixes a new dynamic member's id.
	ClientID   string
	ClientHost string
}

// JoinGroupProtocol is one assignor a member supports, with its metadata.
type JoinGroupProtocol struct {
	Name     string
	Metadata []byte
}

// JoinGroupResponse completes a join. With ErrMemberIDRequired the
// response carries only MemberID, the id to join with.
type JoinGroupResponse struct {
	GenerationID int32
	ProtocolType string
	// ProtocolName is the assignor the group chose for the generation.
	ProtocolName string
	// LeaderID is the member that computes the assignment.
	LeaderID string
	// SkipAssignment tells a static leader that rejoined without a
	// rebalance not to compute an assignment (KIP-814).
	SkipAssignment bool
	MemberID       string
	// Members, for the leader only, lists every member and its metadata
	// for ProtocolName.
	Members []JoinGroupMember
}

// JoinGroupMember is one member as the leader sees it.
type JoinGroupMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// SyncGroupRequest completes a rebalance: the leader sends the assignment,
// every member receives its own.
type SyncGroupRequest struct {
	Group        string
	GenerationID int32
	MemberID     string
	InstanceID   string
	// ProtocolType and ProtocolName, when set, must match the group's
	// (SyncGroup v5).
	ProtocolType string
	ProtocolName string
	// Assignments is the leader's assignment; followers send none.
	Assignments []SyncGroupAssignment
}

// SyncGroupAssignment is one member's assignment, as the leader encoded it.
type SyncGroupAssignment struct {
	MemberID   string
	Assignment []byte
}

// SyncGroupResponse carries the member's assignment.
type SyncGroupResponse struct {
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// HeartbeatRequest keeps a member's session alive. Its error tells the
// member to rejoin (ErrRebalanceInProgress) or that it was fenced.
type HeartbeatRequest struct {
	Group        string
	GenerationID int32
	MemberID     string
	InstanceID   string
}

// LeaveGroupRequest removes members (v3 takes several, each by member id or
// instance id).
type LeaveGroupRequest struct {
	Group   string
	Members []LeaveGroupMember
}

// LeaveGroupMember names a leaving member.
type LeaveGroupMember struct {
	MemberID   string
	InstanceID string
	Reason     string
}

// LeaveGroupResponse has one result per member of the request.
type LeaveGroupResponse struct {
	Members []LeaveGroupMemberResponse
}

// LeaveGroupMemberResponse is one member's result; Err is nil or carries a
// *kerr.Error.
type LeaveGroupMemberResponse struct {
	MemberID   string
	InstanceID string
	Err        error
}

// OffsetCommitRequest commits offsets. A member of the group sends its
// MemberID and GenerationID, which must be current; a commit with
// GenerationID -1 and no member comes from outside group management (an
// admin reset, a consumer that assigns itself partitions) and is accepted
// only while the group is Empty.
type OffsetCommitRequest struct {
	Group        string
	GenerationID int32
	MemberID     string
	InstanceID   string
	Topics       []OffsetCommitTopic
}

// OffsetCommitTopic holds the partitions of one topic to commit.
type OffsetCommitTopic struct {
	Topic      string
	Partitions []OffsetCommitPartition
}

// OffsetCommitPartition is one committed position: the offset of the next
// record to consume.
type OffsetCommitPartition struct {
	Partition int32
	Offset    int64
	// LeaderEpoch is the leader epoch of the last consumed record, -1 if
	// unknown (KIP-320).
	LeaderEpoch int32
	Metadata    string
}

// OffsetCommitResponse has one result per partition of the request.
type OffsetCommitResponse struct {
	Topics []OffsetCommitResponseTopic
}

// OffsetCommitResponseTopic holds one topic's partition results.
type OffsetCommitResponseTopic struct {
	Topic      string
	Partitions []OffsetCommitResponsePartition
}

// OffsetCommitResponsePartition is one partition's result; Err is nil or
// carries a *kerr.Error.
type OffsetCommitResponsePartition struct {
	Partition int32
	Err       error
}

// OffsetFetchRequest reads committed offsets. Topics nil means every
// partition the group has an offset for.
type OffsetFetchRequest struct {
	Group  string
	Topics []OffsetFetchTopic
}

// OffsetFetchTopic names partitions of one topic.
type OffsetFetchTopic struct {
	Topic      string
	Partitions []int32
}

// OffsetFetchResponse holds the committed offsets.
type OffsetFetchResponse struct {
	Topics []OffsetFetchResponseTopic
}

// OffsetFetchResponseTopic holds one topic's partitions.
type OffsetFetchResponseTopic struct {
	Topic      string
	Partitions []OffsetFetchResponsePartition
}

// OffsetFetchResponsePartition is one partition's committed offset, -1 if
// the group has none.
type OffsetFetchResponsePartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	Err         error
}

// OffsetDeleteRequest deletes committed offsets of partitions the group is
// not subscribed to (KIP-496), writing tombstones.
type OffsetDeleteRequest struct {
	Group  string
	Topics []OffsetFetchTopic
}

// OffsetDeleteResponse has one result per partition of the request.
type OffsetDeleteResponse struct {
	Topics []OffsetCommitResponseTopic
}

// GroupDescription describes one group (DescribeGroups).
type GroupDescription struct {
	Group        string
	Err          error
	State        State
	ProtocolType string
	// Protocol is the assignor of the current generation.
	Protocol     string
	GenerationID int32
	LeaderID     string
	Members      []MemberDescription
}

// MemberDescription describes one member.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Metadata is the member's metadata for the group's protocol;
	// Assignment its assignment of the current generation.
	Metadata   []byte
	Assignment []byte
}

// GroupListing is one group in ListGroups.
type GroupListing struct {
	Group        string
	ProtocolType string
	State        State
}

// DeleteGroupResult is one group's result in DeleteGroups; Err is nil or
// carries a *kerr.Error.
type DeleteGroupResult struct {
	Group string
	Err   error
}

// PartitionLag is one partition's progress for a group. Its fields are
// plain (no embedded TopicPartition, whose String would stand for the whole
// value), so fmt's %v and %+v show every one.
type PartitionLag struct {
	Topic     string
	Partition int32
	// Committed is the group's committed offset, -1 if it has none.
	Committed int64
	// LogStartOffset and HighWatermark are the partition's, when the lag
	// was measured.
	LogStartOffset int64
	HighWatermark  int64
	// Lag is HighWatermark - Committed, or HighWatermark - LogStartOffset
	// without a committed offset; never negative.
	Lag int64
	// MemberID is the member the partition is assigned to in the current
	// generation, "" if none or the group's protocol is not the consumer
	// protocol.
	MemberID string
}
