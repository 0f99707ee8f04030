package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options, Kafka's broker defaults where Kafka has one.
const (
	// DefaultMinSessionTimeout is group.min.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
	// DefaultMaxSessionTimeout is group.max.session.timeout.ms.
	DefaultMaxSessionTimeout = 30 * time.Minute
	// DefaultMaxMetadataBytes is offset.metadata.max.bytes.
	DefaultMaxMetadataBytes = 4096
)

// Options configure a Coordinator. A nil *Options is invalid (Store and
// Topics are required); every zero field means the default stated on it.
type Options struct {
	// Store holds the committed offsets: the partitions of
	// __consumer_offsets. Required.
	Store Store
	// Topics answers partition counts and offsets of the data topics.
	// Required.
	Topics Topics
	// Logger hears rebalances, expired members, offsets clamped at load
	// and records skipped at load, and damage cut at load. Default: discard.
	Logger *slog.Logger
	// Now stamps commits (the commit timestamp of the record). Default
	// time.Now. Session, rebalance and sync timeouts run on the runtime's
	// timers, which testing/synctest makes virtual.
	Now func() time.Time
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (ErrInvalidSessionTimeout outside). Defaults
	// DefaultMinSessionTimeout and DefaultMaxSessionTimeout.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay makes the first rebalance of an empty group
	// wait this long for more members to join, and again after each new
	// one, up to the rebalance timeout (Kafka's
	// group.initial.rebalance.delay.ms, 3 s there). Default 0: the first
	// member's rebalance completes at once, which suits members that start
	// in one process.
	InitialRebalanceDelay time.Duration
	// MaxGroupSize caps the members of a group (ErrGroupMaxSizeReached).
	// Default 0: no cap.
	MaxGroupSize int
	// MaxMetadataBytes caps the metadata string of a commit
	// (ErrOffsetMetadataTooLarge). Default DefaultMaxMetadataBytes.
	MaxMetadataBytes int
	// Unloaded makes NewCoordinator load nothing and own no partition of
	// the Store: its owner calls LoadPartition for each partition of
	// __consumer_offsets it leads and UnloadPartition when it loses one,
	// as Kafka's replica manager calls the group coordinator's onElection
	// and onResignation. A group whose partition is not loaded gets a
	// *NotCoordinatorError. Default false: NewCoordinator loads and owns
	// every partition (one broker).
	Unloaded bool
	// LoadMembers makes a load take back the members of a group's latest
	// metadata record (a Stable generation, each member with its
	// assignment), as Kafka's coordinator does when it takes over a
	// partition: the members are alive on other machines or brokers, and
	// heartbeat on at the new coordinator with their member id and
	// generation, without a rebalance; one that does not within its
	// session timeout is removed as any expired member. Default false:
	// members died with the process that ran them (one broker restarting),
	// and every loaded group is Empty.
	LoadMembers bool
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.MaxMetadataBytes == 0 {
		c.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	return c
}

func (o *Options) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Options.%s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Store == nil:
		return bad("Store", "is nil")
	case o.Store.Partitions() <= 0:
		return bad("Store", "has %d partitions", o.Store.Partitions())
	case o.Topics == nil:
		return bad("Topics", "is nil")
	case o.MinSessionTimeout < 0:
		return bad("MinSessionTimeout", "%v is negative", o.MinSessionTimeout)
	case o.MaxSessionTimeout < o.MinSessionTimeout:
		return bad("MaxSessionTimeout", "%v is below MinSessionTimeout %v", o.MaxSessionTimeout, o.MinSessionTimeout)
	case o.InitialRebalanceDelay < 0:
		return bad("InitialRebalanceDelay", "%v is negative", o.InitialRebalanceDelay)
	case o.MaxGroupSize < 0:
		return bad("MaxGroupSize", "%d is negative", o.MaxGroupSize)
	case o.MaxMetadataBytes < 0:
		return bad("MaxMetadataBytes", "%d is negative", o.MaxMetadataBytes)
	}
	return nil
}

// Coordinator is the group coordinator: it runs the classic group protocol
// for every group and stores their committed offsets in the Store. Its
// methods are safe for concurrent use. See the package documentation.
type Coordinator struct {
	opts   Options
	store  Store
	topics Topics
	logger *slog.Logger

	// memberID makes new member ids: newMemberID, or a deterministic
	// generator in tests that replay schedules.
	memberID func(clientID, instanceID string) string

	// groupsMu guards groups, parts and closed. Lock order: group.fenceMu,
	// then group.mu, then groupsMu. groups holds the groups of the loaded
	// partitions only.
	groupsMu sync.Mutex
	groups   map[string]*group
	parts    []partOwnership // by partition of the Store
	closed   bool

	// stats are counters since NewCoordinator; see Stats.
	stats struct {
		rebalances, commits, commitErrors, expired atomic.Int64
		loaded, skipped, clamped                   atomic.Int64
		metadataWrites, metadataErrors             atomic.Int64
		loadTime                                   atomic.Int64
	}
}

// NewCoordinator returns a Coordinator over opts.Store, after loading every
// committed offset from it (with Options.Unloaded, nothing: LoadPartition
// loads each partition the caller comes to lead). An offset beyond its partition's log end
// (records lost in a power cut under a flush policy other than FlushSync) is
// clamped to the log end, durably, and reported to the Logger and in
// Stats().Clamped, so the records later written at those offsets are not
// skipped. Records that do not decode are skipped and counted.
func NewCoordinator(opts *Options) (*Coordinator, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{opts: o, store: o.Store, topics: o.Topics, logger: o.Logger, groups: map[string]*group{},
		parts: make([]partOwnership, o.Store.Partitions()), memberID: newMemberID}
	if o.Unloaded {
		return c, nil
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// partOwnership is whether the Coordinator owns a partition of the Store.
type partOwnership struct {
	state ownership
	// seq counts the partition's loads and unloads, so that a load that
	// an unload overtook installs nothing.
	seq uint64
}

type ownership uint8

const (
	unowned ownership = iota
	loading
	owned
)

// NotCoordinatorError is what a call about a group gets from a Coordinator
// that does not own the group's partition of __consumer_offsets: it
// matches ErrNotCoordinator (Kafka's NOT_COORDINATOR: the client looks for
// the coordinator again), or ErrCoordinatorLoadInProgress while
// LoadPartition is reading the partition (the client retries).
type NotCoordinatorError struct {
	Group     string
	Partition int32 // of __consumer_offsets
	Loading   bool
}

func (e *NotCoordinatorError) Error() string {
	if e.Loading {
		return fmt.Sprintf("group %q: %s-%d is loading: %v", e.Group, OffsetsTopic, e.Partition, ErrCoordinatorLoadInProgress)
	}
	return fmt.Sprintf("group %q: %s-%d is not loaded here: %v", e.Group, OffsetsTopic, e.Partition, ErrNotCoordinator)
}

func (e *NotCoordinatorError) Unwrap() error {
	if e.Loading {
		return ErrCoordinatorLoadInProgress
	}
	return ErrNotCoordinator
}

// ownedLocked returns nil if the coordinator owns group id's partition, a
// *NotCoordinatorError otherwise.
func (c *Coordinator) ownedLocked(id string) error {
	p := PartitionFor(id, c.store.Partitions())
	switch c.parts[p].state {
	case owned:
		return nil
	case loading:
		return &NotCoordinatorError{Group: id, Partition: p, Loading: true}
	}
	return &NotCoordinatorError{Group: id, Partition: p}
}

// Owns reports whether the coordinator owns (has loaded) partition p of
// the Store.
func (c *Coordinator) Owns(p int32) bool {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	return p >= 0 && int(p) < len(c.parts) && c.parts[p].state == owned
}

func (c *Coordinator) checkPartition(p int32) error {
	if p < 0 || p >= c.store.Partitions() {
		return fmt.Errorf("group: offsets partition %d of %d: %w", p, c.store.Partitions(), ErrUnknownTopicOrPartition)
	}
	return nil
}

// LoadPartition reads partition p of the Store into its groups (their
// committed offsets and generations, as NewCoordinator does for every
// partition) and makes the coordinator own it: Kafka's onElection, called
// when this broker becomes the leader of the partition. Until it returns,
// calls about the partition's groups get ErrCoordinatorLoadInProgress. A
// partition owned or loading already is left as it is. An UnloadPartition
// meanwhile wins: the load installs nothing. ctx ends the load early
// (the partition stays unowned).
func (c *Coordinator) LoadPartition(ctx context.Context, p int32) error {
	if err := c.checkPartition(p); err != nil {
		return err
	}
	c.groupsMu.Lock()
	if c.closed {
		c.groupsMu.Unlock()
		return errClosed()
	}
	if c.parts[p].state != unowned {
		c.groupsMu.Unlock()
		return nil
	}
	c.parts[p].seq++
	c.parts[p].state = loading
	seq := c.parts[p].seq
	c.groupsMu.Unlock()

	groups, err := c.loadPartition(ctx, p)

	c.groupsMu.Lock()
	if c.parts[p].seq != seq || c.closed {
		c.groupsMu.Unlock()
		return nil // unloaded (or closed) meanwhile
	}
	if err != nil {
		c.parts[p].state = unowned
		c.groupsMu.Unlock()
		return err
	}
	maps.Copy(c.groups, groups)
	c.parts[p].state = owned
	c.groupsMu.Unlock()
	armLoaded(groups)
	return nil
}

// armLoaded starts the session timers of the members loads took back
// (Options.LoadMembers), once their groups are installed; a group closed
// meanwhile (unloaded again) starts none.
func armLoaded(groups map[string]*group) {
	for _, g := range groups {
		g.mu.Lock()
		if !g.closed {
			g.armLoadedLocked()
		}
		g.mu.Unlock()
	}
}

// UnloadPartition gives up partition p of the Store: Kafka's onResignation,
// called when this broker stops leading the partition. Its groups are
// dropped from memory (the Store keeps them for the next owner): every
// later call about them, and every JoinGroup or SyncGroup waiting, gets a
// *NotCoordinatorError, and their members find the new coordinator. It
// returns once the commits in flight on those groups are written and
// answered, so a load that starts after it sees every commit acknowledged
// here.
func (c *Coordinator) UnloadPartition(p int32) error {
	if err := c.checkPartition(p); err != nil {
		return err
	}
	c.groupsMu.Lock()
	if c.closed {
		c.groupsMu.Unlock()
		return errClosed()
	}
	c.parts[p].seq++
	c.parts[p].state = unowned
	var gone []*group
	for id, g := range c.groups {
		if g.partition == p {
			gone = append(gone, g)
			delete(c.groups, id)
		}
	}
	c.groupsMu.Unlock()
	for _, g := range gone {
		g.fenceMu.Lock() // the commits in flight are written and applied
		g.shutdown(&NotCoordinatorError{Group: g.id, Partition: p})
		g.fenceMu.Unlock()
	}
	if len(gone) > 0 {
		c.logger.Info("group: unloaded an offsets partition", "partition", p, "groups", len(gone))
	}
	return nil
}

// Close stops the coordinator: its timers stop, and every JoinGroup or
// SyncGroup waiting returns ErrClosed (with ErrCoordinatorNotAvailable), as
// does every later call. The Store is not closed. Close is idempotent;
// later calls return ErrClosed.
func (c *Coordinator) Close() error {
	c.groupsMu.Lock()
	if c.closed {
		c.groupsMu.Unlock()
		return ErrClosed
	}
	c.closed = true
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.groupsMu.Unlock()
	for _, g := range groups {
		g.shutdown(errClosed())
	}
	return nil
}

// errClosed is what requests get from a closed coordinator.
func errClosed() error { return fmt.Errorf("%w: %w", ErrClosed, ErrCoordinatorNotAvailable) }

// lookup returns a group, or nil if the coordinator does not know it.
func (c *Coordinator) lookup(id string) (*group, error) {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	if c.closed {
		return nil, errClosed()
	}
	if err := c.ownedLocked(id); err != nil {
		return nil, err
	}
	return c.groups[id], nil
}

// getOrCreate returns a group, creating it Empty if needed.
func (c *Coordinator) getOrCreate(id string) (*group, error) {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	if c.closed {
		return nil, errClosed()
	}
	if err := c.ownedLocked(id); err != nil {
		return nil, err
	}
	g := c.groups[id]
	if g == nil {
		g = newGroup(c, id)
		c.groups[id] = g
	}
	return g, nil
}

// forget removes a dead group from the map, if it is still the one there.
func (c *Coordinator) forget(g *group) {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
}

// newMemberID makes a member id as Kafka does: the client id (or the
// instance id of a static member), a dash and a random UUID.
func newMemberID(clientID, instanceID string) string {
	prefix := clientID
	if instanceID != "" {
		prefix = instanceID
	}
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ValidateGeneration checks that memberID (with instanceID, for a static
// member) is a member of the group at generation: the fence every fetch of
// an in-process member passes, so that a member the group has expelled or
// moved past reads nothing more (the classic protocol fences only commits
// and heartbeats). It returns nil, or ErrUnknownMemberID,
// ErrFencedInstanceID, ErrIllegalGeneration or ErrCoordinatorNotAvailable
// wrapped with the group and member.
func (c *Coordinator) ValidateGeneration(groupID, memberID, instanceID string, generation int32) error {
	g, err := c.lookup(groupID)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("group %q: member %q: %w", groupID, memberID, ErrUnknownMemberID)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == StateDead {
		return fmt.Errorf("group %q: %w", groupID, ErrCoordinatorNotAvailable)
	}
	if _, err := g.validateMemberLocked(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return fmt.Errorf("group %q: member %q at generation %d, group at %d: %w", groupID, memberID, generation, g.generation, ErrIllegalGeneration)
	}
	return nil
}

// watch returns a channel that is closed at the group's next membership
// change (a rebalance starts, a generation completes, a member is
// removed). In-process members select on it next to their heartbeat
// ticker, so they learn of a rebalance at once instead of at their next
// heartbeat; the heartbeat they then send says what changed.
func (c *Coordinator) watch(groupID string) <-chan struct{} {
	g, err := c.lookup(groupID)
	if err != nil || g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.watchCh == nil {
		g.watchCh = make(chan struct{})
	}
	return g.watchCh
}

// ListGroups lists the groups the coordinator knows, by id.
func (c *Coordinator) ListGroups(ctx context.Context) ([]GroupListing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.groupsMu.Lock()
	if c.closed {
		c.groupsMu.Unlock()
		return nil, errClosed()
	}
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.groupsMu.Unlock()
	out := make([]GroupListing, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if g.state != StateDead {
			out = append(out, GroupListing{Group: g.id, ProtocolType: g.protocolType, State: g.state})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// DescribeGroups describes groups; an unknown group is reported Dead, as
// Kafka does.
func (c *Coordinator) DescribeGroups(ctx context.Context, groupIDs []string) ([]GroupDescription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]GroupDescription, 0, len(groupIDs))
	for _, id := range groupIDs {
		g, err := c.lookup(id)
		if nce, ok := errors.AsType[*NotCoordinatorError](err); ok {
			out = append(out, GroupDescription{Group: id, Err: nce, State: StateDead, GenerationID: -1})
			continue
		}
		if err != nil {
			return nil, err
		}
		if g == nil {
			out = append(out, GroupDescription{Group: id, State: StateDead, GenerationID: -1})
			continue
		}
		g.mu.Lock()
		d := GroupDescription{Group: id, State: g.state, ProtocolType: g.protocolType, GenerationID: g.generation, LeaderID: g.leader}
		if g.state == StateStable || g.state == StateCompletingRebalance {
			d.Protocol = g.protocol
		}
		for _, mid := range g.order {
			m := g.members[mid]
			md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
			if d.Protocol != "" {
				md.Metadata = slices.Clone(m.metadataFor(g.protocol))
			}
			if g.state == StateStable {
				md.Assignment = slices.Clone(m.assignment)
			}
			d.Members = append(d.Members, md)
		}
		g.mu.Unlock()
		out = append(out, d)
	}
	return out, nil
}

// Stats counts what the coordinator did since NewCoordinator.
type Stats struct {
	// Groups and Members are the groups known now and their members.
	Groups, Members int
	// Rebalances counts completed joins (new generations).
	Rebalances int64
	// Commits counts committed offsets written; CommitErrors the offsets
	// a failed Store append left unknown.
	Commits, CommitErrors int64
	// Expired counts members removed for missing their session,
	// rebalance or sync deadline.
	Expired int64
	// LoadedRecords are the offsets-topic records read at load, in
	// LoadTime; SkippedRecords those that did not decode.
	LoadedRecords, SkippedRecords int64
	LoadTime                      time.Duration
	// Clamped counts committed offsets found beyond their partition's log
	// end at load and moved back to it.
	Clamped int64
	// MetadataWrites counts group metadata records written (completed
	// rebalances, groups become Empty); MetadataErrors those that failed,
	// which leave readers of the offsets topic an older membership.
	MetadataWrites, MetadataErrors int64
}

// Stats returns the coordinator's counters.
func (c *Coordinator) Stats() Stats {
	s := Stats{
		Rebalances:     c.stats.rebalances.Load(),
		Commits:        c.stats.commits.Load(),
		CommitErrors:   c.stats.commitErrors.Load(),
		Expired:        c.stats.expired.Load(),
		LoadedRecords:  c.stats.loaded.Load(),
		SkippedRecords: c.stats.skipped.Load(),
		LoadTime:       time.Duration(c.stats.loadTime.Load()),
		Clamped:        c.stats.clamped.Load(),
		MetadataWrites: c.stats.metadataWrites.Load(),
		MetadataErrors: c.stats.metadataErrors.Load(),
	}
	c.groupsMu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.groupsMu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		if g.state != StateDead {
			s.Groups++
			s.Members += len(g.members)
		}
		g.mu.Unlock()
	}
	return s
}
