package group

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of MemberOptions, Kafka's consumer defaults.
const (
	// DefaultSessionTimeout is session.timeout.ms.
	DefaultSessionTimeout = 45 * time.Second
	// DefaultRebalanceTimeout is max.poll.interval.ms.
	DefaultRebalanceTimeout = 5 * time.Minute
	// DefaultHeartbeatInterval is heartbeat.interval.ms.
	DefaultHeartbeatInterval = 3 * time.Second
	// DefaultAutoCommitInterval is auto.commit.interval.ms.
	DefaultAutoCommitInterval = 5 * time.Second
	// DefaultClientID prefixes the member ids of dynamic members.
	DefaultClientID = "folio"
)

// ResetPolicy is where a consumer goes when it has no valid position in a
// partition (Kafka's auto.offset.reset): for a group member, in a partition
// the group has no committed offset for; for any consumer, when its
// position lies outside the partition's offsets (below the log start after
// retention deleted records, or past the end). The root package's
// folio.ResetPolicy is this type; its plain Consumer uses it too.
type ResetPolicy uint8

const (
	// ResetEarliest starts at the log start offset: a new group reads the
	// backlog produced before it joined. The zero value, and the default
	// (franz-go's and kafka-go's; Java Kafka's default is latest).
	ResetEarliest ResetPolicy = iota
	// ResetLatest starts at the high watermark: only records produced from
	// then on are read.
	ResetLatest
	// ResetNone leaves the partition without a position and reports it: a
	// member's Poll returns ErrNoOffset until the application Seeks it; a
	// plain Consumer's Poll returns its out-of-range error.
	ResetNone
)

func (r ResetPolicy) String() string {
	switch r {
	case ResetLatest:
		return "latest"
	case ResetEarliest:
		return "earliest"
	case ResetNone:
		return "none"
	}
	return "ResetPolicy(" + strconv.Itoa(int(r)) + ")"
}

// MemberOptions configure a Member. A nil *MemberOptions is invalid
// (Topics is required); every zero field means the default stated on it.
type MemberOptions struct {
	// Topics is the subscription. Required.
	Topics []string
	// Assignors are the assignors the member supports, preferred first;
	// the group uses one that every member supports. If all of them are
	// cooperative the member follows the cooperative protocol, else the
	// eager one (Kafka's rule). Default [CooperativeSticky()].
	Assignors []Assignor
	// SessionTimeout: the coordinator expels the member after this long
	// without a heartbeat. Default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds how long a rebalance waits for this member to
	// rejoin, and how long the application may go without calling Poll
	// (or taking the next record of Records) before the member leaves the
	// group on its own (Kafka's max.poll.interval.ms). Default
	// DefaultRebalanceTimeout.
	RebalanceTimeout time.Duration
	// HeartbeatInterval is the period of the background heartbeat; it
	// must be below SessionTimeout. Default DefaultHeartbeatInterval, or a
	// third of SessionTimeout when that is shorter.
	HeartbeatInterval time.Duration
	// InstanceID makes the member static (group.instance.id): a restart
	// within the session timeout takes its partitions back without a
	// rebalance, Close does not leave the group, and another member
	// joining with the same InstanceID fences this one
	// (ErrFencedInstanceID). Default "": dynamic.
	InstanceID string
	// ClientID prefixes the member id. Default DefaultClientID.
	ClientID string
	// Reset says where to start in a partition without a committed
	// offset. Default ResetEarliest.
	Reset ResetPolicy
	// DisableAutoCommit turns off auto-commit. With auto-commit on (the
	// default), Poll commits every AutoCommitInterval what the
	// application has processed: the records of earlier Polls (a Poll
	// call says the previous one's records are done), and in a Records
	// loop every record whose loop body returned; processed records are
	// also committed before a rebalance gives their partitions up and at
	// Close. That is at-least-once: a record can be delivered again after
	// a crash, never skipped.
	DisableAutoCommit bool
	// AutoCommitInterval is the period of auto-commit. Default
	// DefaultAutoCommitInterval.
	AutoCommitInterval time.Duration
	// OnAssigned is called with partitions the member gains, after their
	// positions are set and before they are read. Default nil.
	OnAssigned func(ctx context.Context, partitions []TopicPartition)
	// OnRevoked is called with partitions the member gives up in a
	// rebalance or at Close, while it still owns them, so it can commit
	// (Commit works here). Default nil.
	OnRevoked func(ctx context.Context, partitions []TopicPartition)
	// OnLost is called with partitions the member lost without giving
	// them up: it was expelled or fenced, and their next owner may already
	// read them, so commits fail. Default: OnRevoked, as in Kafka.
	OnLost func(ctx context.Context, partitions []TopicPartition)
	// Logger hears rebalances and failures of background work. Default:
	// discard.
	Logger *slog.Logger
	// FindCoordinator names the group's coordinator now, as a Kafka
	// client's FindCoordinator does: where the coordinator moves with the
	// leadership of the group's offsets partition (a cluster), the member
	// follows it. When a coordinator answers that it is not (or no
	// longer, or not yet) the group's (ErrNotCoordinator,
	// ErrCoordinatorLoadInProgress, ErrCoordinatorNotAvailable, or
	// ErrClosed: it was closed), the member asks again, switches to the
	// answer and retries the call, waiting RetryBackoff between tries
	// while the answer is the same coordinator or an error (no leader
	// yet), for as long as the call's ctx allows. Such answers then never
	// stop the member; an error from FindCoordinator that matches
	// ErrClosed (the member's own side is closing) does. The new
	// coordinator may not know the member (Kafka's takes no membership
	// over): it rejoins, its partitions lost, and resumes from the
	// committed offsets. Join may be given a nil Coordinator: it starts
	// from FindCoordinator's answer. Default nil: the Coordinator given to
	// Join is the group's for good.
	FindCoordinator func(ctx context.Context) (*Coordinator, error)
}

// RetryBackoff is how long a member with MemberOptions.FindCoordinator
// waits before it asks again for a coordinator that is not available, or
// retries one that is loading: Kafka's retry.backoff.ms.
const RetryBackoff = 100 * time.Millisecond

func (o *MemberOptions) withDefaults() MemberOptions {
	var c MemberOptions
	if o != nil {
		c = *o
	}
	if len(c.Assignors) == 0 {
		c.Assignors = []Assignor{CooperativeSticky()}
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = min(DefaultHeartbeatInterval, c.SessionTimeout/3)
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.AutoCommitInterval == 0 {
		c.AutoCommitInterval = DefaultAutoCommitInterval
	}
	if c.OnLost == nil {
		c.OnLost = c.OnRevoked
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Topics = slices.Clone(c.Topics)
	return c
}

func (o *MemberOptions) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: MemberOptions.%s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	if len(o.Topics) == 0 {
		return bad("Topics", "is empty")
	}
	for _, t := range o.Topics {
		if t == "" {
			return bad("Topics", "holds an empty name")
		}
	}
	names := map[string]bool{}
	for i, a := range o.Assignors {
		if a == nil {
			return bad("Assignors", "[%d] is nil", i)
		}
		if names[a.Name()] {
			return bad("Assignors", "names %q twice", a.Name())
		}
		names[a.Name()] = true
	}
	switch {
	case o.SessionTimeout < 0:
		return bad("SessionTimeout", "%v is negative", o.SessionTimeout)
	case o.RebalanceTimeout < 0:
		return bad("RebalanceTimeout", "%v is negative", o.RebalanceTimeout)
	case o.HeartbeatInterval <= 0 || o.HeartbeatInterval >= o.SessionTimeout:
		return bad("HeartbeatInterval", "%v must be positive and below SessionTimeout %v", o.HeartbeatInterval, o.SessionTimeout)
	case o.AutoCommitInterval < 0:
		return bad("AutoCommitInterval", "%v is negative", o.AutoCommitInterval)
	case o.Reset > ResetNone:
		return bad("Reset", "%d is not a reset policy", o.Reset)
	}
	return nil
}

// Reader is what a Member consumes through: a consumer of assigned
// partitions from positions set from outside. The Broker adapts its plain
// Consumer to it, so consuming through a group uses the same records and
// the same poll loop as consuming without one.
type Reader[R any] interface {
	// Assign starts reading partitions at the given offsets, or moves to
	// them in partitions already assigned. An offset outside a partition's
	// range is the Reader's to handle (the Broker's consumer applies the
	// member's reset policy).
	Assign(starts []StartOffset) error
	// Unassign stops reading partitions.
	Unassign(tps []TopicPartition) error
	// Poll returns the next records of the assigned partitions, blocking
	// until there are some or ctx ends (then it returns ctx's error and
	// moves no position).
	Poll(ctx context.Context) ([]R, error)
	// Locate returns the partition and offset of a record Poll returned.
	Locate(rec R) (TopicPartition, int64)
}

// StartOffset is where a Reader starts in a partition.
type StartOffset struct {
	TopicPartition
	Offset int64
}

// OffsetsReader is a Reader that knows the offsets of the partitions it
// reads (the copies it reads from): the member takes a reset's start from
// it rather than from the coordinator, which, on another broker of a
// cluster, may hold no replica of the partition.
type OffsetsReader interface {
	Offsets(topic string, partition int32) (PartitionOffsets, error)
}

// readerOffsets returns tp's offsets from the Reader when it knows them,
// else from the coordinator's view of the topics.
func (m *Member[R]) readerOffsets(tp TopicPartition) (PartitionOffsets, error) {
	if r, ok := any(m.reader).(OffsetsReader); ok {
		return r.Offsets(tp.Topic, tp.Partition)
	}
	return m.coordinator().topics.Offsets(tp.Topic, tp.Partition)
}

// errRejoin is the cause with which the heartbeat interrupts a fetch that
// waits for records, so that Poll rejoins the group.
var errRejoin = errors.New("group: rejoin needed")

// Member is an in-process member of a consumer group that reads records R
// through a Reader. It joins with its subscription, heartbeats in the
// background, runs the assignor when the coordinator elects it leader,
// and moves its Reader's assignment with each generation. Rebalances and
// their callbacks run inside Poll (and Records), on the application's
// goroutine, as in Kafka's consumer. Every fetch, heartbeat and commit
// carries its member id and generation; once the group has expelled or
// moved past it, they are refused and the member gives up its partitions
// (OnLost) and rejoins.
//
// Poll and Records may not be called from the callbacks, nor from several
// goroutines at once with any benefit (they serialize). Commit, Assignment
// and the other getters are safe from any goroutine.
type Member[R any] struct {
	// coord is the coordinator the member talks to: the one Join was
	// given, switched by follow when FindCoordinator names another. Read
	// it through coordinator() once per request, and follow from the
	// value read, so that two failures of one coordinator switch once.
	coord     atomic.Pointer[Coordinator]
	group     string
	reader    Reader[R]
	opts      MemberOptions
	protocol  RebalanceProtocol
	assignors map[string]Assignor
	logger    *slog.Logger

	// pollMu serializes the application's side: Poll, Records' polls and
	// Close. Rebalances and the callbacks run under it. Lock order: pollMu,
	// then mu; mu is never held across a call to the coordinator, the
	// Reader or a callback.
	pollMu sync.Mutex

	// mu guards every field below.
	mu         sync.Mutex
	memberID   string
	generation int32
	leader     bool
	// rejoin asks the next Poll to rejoin; fenced holds the error that
	// removed the member from its generation (its partitions are lost);
	// fatal stops the member for good.
	rejoin      bool
	fenced      error
	fatal       error
	inRebalance bool
	inPoll      bool
	closing     bool
	// freeze, when set, stops the heartbeat until it is closed: tests
	// pause the member's process with it.
	freeze       chan struct{}
	lastPoll     time.Time
	owned        map[TopicPartition]bool
	unpositioned map[TopicPartition]bool
	// consumed is the position after the records handed to the
	// application; processed after those it finished; pending after the
	// last Poll's, which become processed at the next Poll; committed is
	// what the coordinator acknowledged.
	consumed, processed, pending, committed map[TopicPartition]int64
	nextAutoCommit                          time.Time
	partitionCounts                         map[string]int32 // the leader's view at its last assignment
	// withheldGen is the generation whose assignment (made by this
	// member as leader) withheld partitions, -1 if none; withheldAt when.
	withheldGen             int32
	withheldAt              time.Time
	pollCancel, fetchCancel context.CancelCauseFunc

	kick chan struct{}
	stop chan struct{}
	// stopCtx ends when Close stops the heartbeat: it bounds the
	// heartbeat's search for a new coordinator.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	wg         sync.WaitGroup
	closed     atomic.Bool
}

// Join joins a group with a subscription and returns once the member has
// its first assignment (and its OnAssigned ran), or ctx ended. The
// coordinator and reader stay owned by the caller; Close the Member before
// either. c may be nil when opts.FindCoordinator is set: the member starts
// from its answer.
func Join[R any](ctx context.Context, c *Coordinator, groupID string, reader Reader[R], opts *MemberOptions) (*Member[R], error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if groupID == "" {
		return nil, fmt.Errorf("%w: empty group id: %w", ErrInvalidOptions, ErrInvalidGroupID)
	}
	if (c == nil && o.FindCoordinator == nil) || reader == nil {
		return nil, fmt.Errorf("%w: nil coordinator or reader", ErrInvalidOptions)
	}
	if c == nil {
		var err error
		if c, err = findFirst(ctx, groupID, o.FindCoordinator); err != nil {
			return nil, err
		}
	}
	m := &Member[R]{
		group: groupID, reader: reader, opts: o, logger: o.Logger,
		assignors: map[string]Assignor{}, protocol: Cooperative, generation: -1, withheldGen: -1,
		owned: map[TopicPartition]bool{}, unpositioned: map[TopicPartition]bool{},
		consumed: map[TopicPartition]int64{}, processed: map[TopicPartition]int64{},
		pending: map[TopicPartition]int64{}, committed: map[TopicPartition]int64{},
		lastPoll: time.Now(), kick: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	for _, a := range o.Assignors {
		m.assignors[a.Name()] = a
		if a.Protocol() != Cooperative {
			m.protocol = Eager
		}
	}
	m.coord.Store(c)
	m.stopCtx, m.stopCancel = context.WithCancel(context.Background())
	m.nextAutoCommit = time.Now().Add(o.AutoCommitInterval)
	m.wg.Add(1)
	go m.heartbeatLoop()
	m.pollMu.Lock()
	err := m.ensureActive(ctx)
	m.pollMu.Unlock()
	if err != nil {
		// Give back whatever the failed join got: partitions, membership.
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// MemberID returns the member id of the current generation ("" while the
// member is not in the group).
func (m *Member[R]) MemberID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.memberID
}

// Generation returns the generation the member is in, -1 if none.
func (m *Member[R]) Generation() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.generation
}

// Assignment returns the partitions the member owns, sorted.
func (m *Member[R]) Assignment() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedPartitions(slices.Collect(maps.Keys(m.owned)))
}

// Group returns the group id.
func (m *Member[R]) Group() string { return m.group }

// Poll returns the next records of the member's partitions, blocking until
// there are some or ctx ends. Calling it says that the records of the
// previous Poll are processed. It first does what the group needs: a
// pending rebalance (with its callbacks), the auto-commit when due, the
// handling of a fencing (OnLost, then rejoin). It returns ErrNoOffset while
// a partition without committed offset waits for a Seek (ResetNone), and
// ErrFencedInstanceID once another process took the member's InstanceID.
func (m *Member[R]) Poll(ctx context.Context) ([]R, error) {
	recs, err := m.poll(ctx)
	if err != nil {
		return nil, err
	}
	ends := map[TopicPartition]int64{}
	for _, r := range recs {
		tp, off := m.reader.Locate(r)
		ends[tp] = max(ends[tp], off+1)
	}
	m.mu.Lock()
	for tp, end := range ends {
		if m.owned[tp] {
			m.consumed[tp] = max(m.consumed[tp], end)
			m.pending[tp] = max(m.pending[tp], end)
		}
	}
	m.mu.Unlock()
	return recs, nil
}

// Records iterates over the member's records, polling as needed, until the
// loop stops or an error (ctx's included) is yielded. A record counts as
// processed (for auto-commit) once the loop body returns for it; breaking
// out of the loop leaves the next Records or Poll at the record after it.
func (m *Member[R]) Records(ctx context.Context) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		for {
			recs, err := m.poll(ctx)
			if err != nil {
				var zero R
				yield(zero, err)
				return
			}
			for i, r := range recs {
				tp, off := m.reader.Locate(r)
				m.mu.Lock()
				owned := m.owned[tp]
				if owned {
					m.consumed[tp] = max(m.consumed[tp], off+1)
				}
				m.mu.Unlock()
				if !owned {
					continue // revoked by a Close from the loop body
				}
				more := yield(r, nil)
				m.mu.Lock()
				m.lastPoll = time.Now()
				if m.owned[tp] {
					m.processed[tp] = max(m.processed[tp], off+1)
				}
				m.mu.Unlock()
				if !more {
					m.rewind(recs[i+1:])
					return
				}
			}
		}
	}
}

// rewind moves the Reader back to the first of recs per partition: records
// a poll returned that the application did not take.
func (m *Member[R]) rewind(recs []R) {
	first := map[TopicPartition]int64{}
	for _, r := range recs {
		tp, off := m.reader.Locate(r)
		if _, ok := first[tp]; !ok {
			first[tp] = off
		}
	}
	m.mu.Lock()
	var starts []StartOffset
	for tp, off := range first {
		if m.owned[tp] {
			starts = append(starts, StartOffset{tp, off})
		}
	}
	m.mu.Unlock()
	if len(starts) > 0 {
		if err := m.reader.Assign(starts); err != nil {
			m.logger.Warn("group: rewinding the reader after the loop stopped", "group", m.group, "err", err)
		}
	}
}

// poll runs the group's work and one fetch, and returns its records.
func (m *Member[R]) poll(ctx context.Context) ([]R, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	m.pollMu.Lock()
	defer m.pollMu.Unlock()
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.pollCancel, m.inPoll, m.lastPoll = cancel, true, time.Now()
	// A new poll says the records of the previous Poll are processed.
	for tp, off := range m.pending {
		if m.owned[tp] {
			m.processed[tp] = max(m.processed[tp], off)
		}
	}
	clear(m.pending)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.pollCancel, m.inPoll, m.lastPoll = nil, false, time.Now()
		m.mu.Unlock()
	}()
	for {
		if pctx.Err() != nil {
			return nil, context.Cause(pctx)
		}
		if err := m.ensureActive(pctx); err != nil {
			return nil, err
		}
		m.maybeAutoCommit(pctx)
		m.mu.Lock()
		if len(m.unpositioned) > 0 {
			tps := sortedPartitions(slices.Collect(maps.Keys(m.unpositioned)))
			m.mu.Unlock()
			return nil, fmt.Errorf("group %q: %v: %w", m.group, tps, ErrNoOffset)
		}
		if m.rejoin || m.fenced != nil || m.fatal != nil {
			m.mu.Unlock()
			continue
		}
		id, gen := m.memberID, m.generation
		fctx, fcancel := context.WithCancelCause(pctx)
		m.fetchCancel = fcancel
		// A fetch that waits for records must not hold back the commit of
		// what was processed before it: wake it when the commit is due.
		var commitTimer *time.Timer
		if d, ok := m.autoCommitDueLocked(); ok {
			commitTimer = time.AfterFunc(d, func() { fcancel(errAutoCommitDue) })
		}
		m.mu.Unlock()

		recs, err := m.fetch(fctx, id, gen)
		if commitTimer != nil {
			commitTimer.Stop()
		}
		m.mu.Lock()
		m.fetchCancel = nil
		m.mu.Unlock()
		fcancel(nil)
		if err != nil {
			if pctx.Err() != nil {
				return nil, context.Cause(pctx)
			}
			if cause := context.Cause(fctx); errors.Is(cause, errRejoin) || errors.Is(cause, errAutoCommitDue) || fencingError(err) {
				continue
			}
			return nil, err
		}
		if len(recs) > 0 {
			return recs, nil
		}
	}
}

// fetch reads once, fenced by the member's generation before and after:
// records read by a member the group moved past are dropped (their next
// owner reads them from the committed offset).
//
// With FindCoordinator, a coordinator that moved is followed (the check
// is asked of the new one). Records read but not handed out for any reason
// other than the generation's end go back to the Reader: the member still
// owns their partitions, and its next fetch must read them again.
func (m *Member[R]) fetch(ctx context.Context, id string, gen int32) ([]R, error) {
	validate := func(c *Coordinator) (struct{}, error) {
		return struct{}{}, c.ValidateGeneration(m.group, id, m.opts.InstanceID, gen)
	}
	if _, err := withCoordinator(ctx, m, validate); err != nil {
		return nil, m.onRequestError(err, id, gen)
	}
	recs, err := m.reader.Poll(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := withCoordinator(ctx, m, validate); err != nil {
		if !fencingError(err) {
			m.rewind(recs)
		}
		return nil, m.onRequestError(err, id, gen)
	}
	return recs, nil
}

// onRequestError records what a refused request, sent as member id at
// generation gen, says about the member, and returns err. An answer to a
// request of an earlier incarnation (the member has rejoined since) is
// ignored, as Kafka's client ignores responses of a generation it left:
// it must not fence the current one.
func (m *Member[R]) onRequestError(err error, id string, gen int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if errors.Is(err, ErrClosed) && m.opts.FindCoordinator == nil {
		// The coordinator is the group's for good: closed, it never
		// answers again. A member that follows its coordinator looks
		// for the next one instead (withCoordinator).
		m.setFatalLocked(err)
		return err
	}
	if m.memberID != id || m.generation != gen {
		return err
	}
	switch {
	case errors.Is(err, ErrFencedInstanceID):
		m.setFatalLocked(err)
	case fencingError(err):
		m.markFencedLocked(err)
	case errors.Is(err, ErrRebalanceInProgress) && !m.inRebalance:
		// Not while the member rebalances: the join under way takes it
		// past the generation the answer is about. A heartbeat sent
		// just before that join, answered while it waits, would else
		// make the member rejoin the generation it has just joined, for
		// one more rebalance of the whole group.
		m.requestRejoinLocked()
	}
	return err
}

// interruptLocked stops a fetch that waits for records, so that Poll
// attends to the group.
func (m *Member[R]) interruptLocked() {
	if m.fetchCancel != nil {
		m.fetchCancel(errRejoin)
	}
}

func (m *Member[R]) requestRejoinLocked() {
	m.rejoin = true
	m.interruptLocked()
}

func (m *Member[R]) markFencedLocked(err error) {
	if m.fenced == nil {
		m.fenced = err
	}
	m.interruptLocked()
}

func (m *Member[R]) setFatalLocked(err error) {
	if m.fatal == nil {
		m.fatal = err
	}
	m.interruptLocked()
}

// ensureActive brings the member into the current generation: it handles a
// fencing (the partitions are lost), then joins and syncs until the member
// holds an assignment and needs no second rebalance.
func (m *Member[R]) ensureActive(ctx context.Context) error {
	for {
		m.mu.Lock()
		fatal, fenced := m.fatal, m.fenced
		need := m.rejoin || m.memberID == "" || m.generation < 0
		m.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		if fenced != nil {
			m.lose(ctx, fenced)
			continue
		}
		if !need {
			return nil
		}
		if err := m.rebalance(ctx); err != nil {
			return err
		}
	}
}

// lose gives up every partition without committing: the member was
// expelled or moved past, so their next owner may already have them.
func (m *Member[R]) lose(ctx context.Context, cause error) {
	m.mu.Lock()
	lost := sortedPartitions(slices.Collect(maps.Keys(m.owned)))
	m.dropLocked(lost)
	if !errors.Is(cause, ErrIllegalGeneration) {
		m.memberID = ""
	}
	m.generation, m.leader, m.fenced, m.rejoin = -1, false, nil, true
	m.mu.Unlock()
	m.logger.Info("group: member lost its partitions", "group", m.group, "partitions", len(lost), "cause", cause)
	if len(lost) > 0 {
		if err := m.reader.Unassign(lost); err != nil {
			m.logger.Warn("group: unassigning lost partitions", "group", m.group, "err", err)
		}
		if m.opts.OnLost != nil {
			m.opts.OnLost(ctx, lost)
		}
	}
}

// dropLocked forgets the member's state for partitions it gives up.
func (m *Member[R]) dropLocked(tps []TopicPartition) {
	for _, tp := range tps {
		delete(m.owned, tp)
		delete(m.unpositioned, tp)
		delete(m.consumed, tp)
		delete(m.processed, tp)
		delete(m.pending, tp)
		delete(m.committed, tp)
	}
}

// rebalance runs one rebalance from the member's side, in named steps:
// prepareJoin (commit, and under the eager protocol revoke everything),
// then join (JoinGroup) and sync (the assignment if it leads, SyncGroup)
// until the group hands out an assignment, then applyAssignment. A
// fencing on the way returns nil: ensureActive loses the partitions and
// calls again. A rebalance cut short (ctx, a refusal, the assignor, the
// Reader) leaves the member asking to rejoin: JoinGroup may have put it in
// a generation whose share it never received or applied.
func (m *Member[R]) rebalance(ctx context.Context) error {
	m.mu.Lock()
	m.inRebalance, m.rejoin = true, false
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		// The poll timer starts anew: the time spent in the rebalance
		// was the group's, not the application's (Kafka resets its poll
		// timer when the heartbeat thread resumes after a join). Else a
		// Join that waited longer than RebalanceTimeout for the group
		// would leave it as soon as it got its assignment.
		m.inRebalance, m.lastPoll = false, time.Now()
		m.mu.Unlock()
		m.kickHeartbeat() // at once: a rebalance may have begun meanwhile
	}()
	m.prepareJoin(ctx)
	for {
		resp, err := m.join(ctx)
		if err == nil {
			var tps []TopicPartition
			var again bool
			if tps, again, err = m.sync(ctx, resp); again {
				continue
			}
			if err == nil {
				err = m.applyAssignment(ctx, tps)
			}
		}
		if errors.Is(err, errFencedInRebalance) {
			return nil // lost and rejoined by ensureActive
		}
		if err != nil {
			// The member's generation and partitions and the group's
			// view of them may differ now: the next poll rejoins to
			// settle them.
			m.mu.Lock()
			m.requestRejoinLocked()
			m.mu.Unlock()
		}
		return err
	}
}

// errFencedInRebalance is what join and sync return when the group fenced
// the member (expelled it, or moved past its generation): rebalance hands
// it back to ensureActive, which loses the partitions and rejoins.
var errFencedInRebalance = errors.New("group: fenced during the rebalance")

// prepareJoin readies the member for a JoinGroup (Kafka's onJoinPrepare):
// a member in a generation commits what it processed while the partitions
// are surely its own, and under the eager protocol gives up all of them.
func (m *Member[R]) prepareJoin(ctx context.Context) {
	m.mu.Lock()
	inGeneration := m.memberID != "" && m.generation >= 0
	m.mu.Unlock()
	if inGeneration && !m.opts.DisableAutoCommit {
		// A failure only means more redelivery.
		_ = m.commitProcessed(ctx, nil, true)
	}
	if m.protocol == Eager {
		m.mu.Lock()
		all := sortedPartitions(slices.Collect(maps.Keys(m.owned)))
		m.mu.Unlock()
		m.revoke(ctx, all)
	}
}

// join sends JoinGroup until the member is in a new generation: it takes
// the member id the coordinator requires, and retries while the
// coordinator is busy or the rebalance moves on. It returns the
// generation's response, with the member's id, generation and leadership
// set from it; errFencedInRebalance if the member was fenced; the fatal
// error, ctx's, or the refusal otherwise.
func (m *Member[R]) join(ctx context.Context) (*JoinGroupResponse, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		m.mu.Lock()
		if m.fatal != nil {
			m.mu.Unlock()
			return nil, m.fatal
		}
		if m.fenced != nil {
			m.mu.Unlock()
			return nil, errFencedInRebalance
		}
		req := &JoinGroupRequest{
			Group: m.group, SessionTimeout: m.opts.SessionTimeout, RebalanceTimeout: m.opts.RebalanceTimeout,
			MemberID: m.memberID, InstanceID: m.opts.InstanceID, ProtocolType: ProtocolTypeConsumer,
			RequireKnownMemberID: true, ClientID: m.opts.ClientID,
		}
		owned := slices.Collect(maps.Keys(m.owned))
		gen := m.generation
		meta := encodeSubscription(m.opts.Topics, owned, gen)
		m.mu.Unlock()
		for _, a := range m.opts.Assignors {
			req.Protocols = append(req.Protocols, JoinGroupProtocol{Name: a.Name(), Metadata: meta})
		}
		resp, err := withCoordinator(ctx, m, func(c *Coordinator) (*JoinGroupResponse, error) { return c.JoinGroup(ctx, req) })
		switch {
		case errors.Is(err, ErrMemberIDRequired) && resp != nil:
			m.mu.Lock()
			m.memberID = resp.MemberID
			m.mu.Unlock()
			continue
		case errors.Is(err, ErrRebalanceInProgress), errors.Is(err, ErrCoordinatorNotAvailable) && !errors.Is(err, ErrClosed):
			continue
		case err != nil:
			return nil, m.refused(err, req.MemberID, gen)
		}
		m.mu.Lock()
		m.memberID, m.generation, m.leader = resp.MemberID, resp.GenerationID, resp.LeaderID == resp.MemberID
		m.mu.Unlock()
		return resp, nil
	}
}

// sync completes the generation resp started: the leader runs the assignor,
// every member sends SyncGroup and decodes its share. again says the
// rebalance moved on meanwhile and the member must join again; err is
// errFencedInRebalance if the member was fenced.
func (m *Member[R]) sync(ctx context.Context, resp *JoinGroupResponse) (tps []TopicPartition, again bool, err error) {
	var plan []SyncGroupAssignment
	if resp.LeaderID == resp.MemberID && !resp.SkipAssignment {
		if plan, err = m.assign(resp); err != nil {
			return nil, false, err
		}
	}
	sreq := &SyncGroupRequest{
		Group: m.group, GenerationID: resp.GenerationID, MemberID: resp.MemberID, InstanceID: m.opts.InstanceID,
		ProtocolType: ProtocolTypeConsumer, ProtocolName: resp.ProtocolName, Assignments: plan,
	}
	sresp, err := withCoordinator(ctx, m, func(c *Coordinator) (*SyncGroupResponse, error) { return c.SyncGroup(ctx, sreq) })
	switch {
	case errors.Is(err, ErrRebalanceInProgress):
		return nil, true, nil
	case err != nil:
		return nil, false, m.refused(err, resp.MemberID, resp.GenerationID)
	}
	tps, err = decodeAssignment(sresp.Assignment)
	if err != nil {
		m.mu.Lock()
		m.setFatalLocked(err)
		m.mu.Unlock()
		return nil, false, err
	}
	m.logger.Debug("group: joined", "group", m.group, "member", resp.MemberID, "generation", resp.GenerationID,
		"protocol", resp.ProtocolName, "leader", resp.LeaderID == resp.MemberID, "partitions", len(tps))
	return tps, false, nil
}

// refused records what a refused JoinGroup or SyncGroup, sent as member id
// at generation gen, says about the member (onRequestError), and returns
// errFencedInRebalance for a fencing that a rejoin cures (any but of the
// member's instance id, which is fatal), err otherwise.
func (m *Member[R]) refused(err error, id string, gen int32) error {
	m.onRequestError(err, id, gen)
	if fencingError(err) && !errors.Is(err, ErrFencedInstanceID) {
		return errFencedInRebalance
	}
	return err
}

// assign runs the group's assignor over every member's subscription, as the
// leader, and encodes each member's share.
func (m *Member[R]) assign(resp *JoinGroupResponse) ([]SyncGroupAssignment, error) {
	a := m.assignors[resp.ProtocolName]
	if a == nil {
		return nil, fmt.Errorf("%w: group %q chose assignor %q, which the leader does not have", ErrAssignment, m.group, resp.ProtocolName)
	}
	subs := make([]Subscription, 0, len(resp.Members))
	counts := map[string]int32{}
	for _, jm := range resp.Members {
		s, err := decodeSubscription(jm.MemberID, jm.InstanceID, jm.Metadata)
		if err != nil {
			// A member whose metadata does not decode gets nothing.
			m.logger.Warn("group: member subscription does not decode", "group", m.group, "member", jm.MemberID, "err", err)
			s = Subscription{MemberID: jm.MemberID, InstanceID: jm.InstanceID, Generation: -1}
		}
		subs = append(subs, s)
		for _, t := range s.Topics {
			if _, seen := counts[t]; seen {
				continue
			}
			if n, err := m.coordinator().topics.Partitions(t); err == nil {
				counts[t] = n
			}
		}
	}
	plan := a.Assign(subs, counts)
	if a.Protocol() == Cooperative {
		// Whatever the assignor did, no partition goes to a new owner
		// before its old one released it.
		withholdTransfers(plan, subs, counts)
	}
	if m.logger.Enabled(context.Background(), slog.LevelDebug) {
		claims := map[string][]TopicPartition{}
		for _, s := range subs {
			claims[s.MemberID] = s.Owned
		}
		m.logger.Debug("group: leader assigned", "group", m.group, "generation", resp.GenerationID,
			"assignor", a.Name(), "owned", claims, "plan", plan)
	}
	out := make([]SyncGroupAssignment, 0, len(subs))
	for _, s := range subs {
		out = append(out, SyncGroupAssignment{MemberID: s.MemberID, Assignment: encodeAssignment(plan[s.MemberID])})
	}
	// Partitions left out (withheld until their owner releases them) need
	// a second rebalance, which the owner starts when it revokes them. An
	// owner that never does (a static member whose process restarted
	// before it revoked: the new process takes over an assignment without
	// them) would leave them orphaned; the leader watches for that.
	subscribed, assigned := 0, 0
	for t, n := range counts {
		if slices.ContainsFunc(subs, func(s Subscription) bool { return s.subscribes(t) }) {
			subscribed += int(n)
		}
	}
	for _, tps := range plan {
		assigned += len(tps)
	}
	m.mu.Lock()
	m.partitionCounts = counts
	m.withheldGen = -1
	if assigned < subscribed {
		m.withheldGen, m.withheldAt = resp.GenerationID, time.Now()
	}
	m.mu.Unlock()
	return out, nil
}

// revoke gives up partitions in an orderly way: what was processed is
// committed, OnRevoked runs while they are still owned, then the Reader
// stops reading them.
func (m *Member[R]) revoke(ctx context.Context, tps []TopicPartition) {
	if len(tps) == 0 {
		return
	}
	if !m.opts.DisableAutoCommit {
		// Not abandoned when ctx ends: a revocation must complete, and
		// the commit waits on no other party. A failure only means more
		// redelivery.
		_ = m.commitProcessed(ctx, tps, true)
	}
	if m.opts.OnRevoked != nil {
		m.opts.OnRevoked(ctx, tps)
	}
	if err := m.reader.Unassign(tps); err != nil {
		m.logger.Warn("group: unassigning revoked partitions", "group", m.group, "err", err)
	}
	m.mu.Lock()
	m.dropLocked(tps)
	m.mu.Unlock()
}

// applyAssignment moves the member to a new assignment: revoked partitions
// are given up (and, under the cooperative protocol, the member rejoins so
// that their new owners can get them), added ones start from the committed
// offset or the reset policy.
func (m *Member[R]) applyAssignment(ctx context.Context, tps []TopicPartition) error {
	next := map[TopicPartition]bool{}
	for _, tp := range tps {
		next[tp] = true
	}
	m.mu.Lock()
	var revoked, added []TopicPartition
	for tp := range m.owned {
		if !next[tp] {
			revoked = append(revoked, tp)
		}
	}
	for tp := range next {
		if !m.owned[tp] {
			added = append(added, tp)
		}
	}
	m.mu.Unlock()
	revoked, added = sortedPartitions(revoked), sortedPartitions(added)
	m.revoke(ctx, revoked)
	if len(revoked) > 0 && m.protocol == Cooperative {
		m.mu.Lock()
		m.requestRejoinLocked()
		m.mu.Unlock()
	}
	if len(added) == 0 {
		return nil
	}
	starts, unpositioned, committed, err := m.startOffsets(ctx, added)
	if err != nil {
		return err
	}
	if len(starts) > 0 {
		if err := m.reader.Assign(starts); err != nil {
			return fmt.Errorf("group %q: assigning %d partitions to the reader: %w", m.group, len(starts), err)
		}
	}
	m.mu.Lock()
	for _, tp := range added {
		m.owned[tp] = true
	}
	for _, tp := range unpositioned {
		m.unpositioned[tp] = true
	}
	for _, s := range starts {
		m.consumed[s.TopicPartition], m.processed[s.TopicPartition] = s.Offset, s.Offset
	}
	maps.Copy(m.committed, committed)
	m.mu.Unlock()
	if m.opts.OnAssigned != nil {
		m.opts.OnAssigned(ctx, added)
	}
	return nil
}

// startOffsets finds where to start in newly assigned partitions: the
// committed offset, or else the reset policy.
func (m *Member[R]) startOffsets(ctx context.Context, tps []TopicPartition) (starts []StartOffset, unpositioned []TopicPartition, committed map[TopicPartition]int64, err error) {
	req := &OffsetFetchRequest{Group: m.group}
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			req.Topics = append(req.Topics, OffsetFetchTopic{Topic: tp.Topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	// OffsetFetch waits on nothing; an ended ctx must not leave the
	// assignment half applied. Only the search for a coordinator that
	// moved ends with ctx.
	resp, err := withCoordinator(ctx, m, func(c *Coordinator) (*OffsetFetchResponse, error) {
		return c.OffsetFetch(context.WithoutCancel(ctx), req)
	})
	if err != nil {
		if errors.Is(err, ErrClosed) && m.opts.FindCoordinator == nil {
			m.mu.Lock()
			m.setFatalLocked(err)
			m.mu.Unlock()
		}
		return nil, nil, nil, err
	}
	committed = map[TopicPartition]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{t.Topic, p.Partition}
			if p.Offset >= 0 {
				committed[tp] = p.Offset
				starts = append(starts, StartOffset{tp, p.Offset})
				continue
			}
			if m.opts.Reset == ResetNone {
				unpositioned = append(unpositioned, tp)
				continue
			}
			po, err := m.readerOffsets(tp)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("group %q: offsets of %s: %w", m.group, tp, err)
			}
			off := po.HighWatermark
			if m.opts.Reset == ResetEarliest {
				off = po.LogStart
			}
			starts = append(starts, StartOffset{tp, off})
		}
	}
	return starts, unpositioned, committed, nil
}

// Seek moves the member's position in a partition it owns: the next Poll
// reads from offset. It is how the application positions a partition
// ResetNone left without one.
func (m *Member[R]) Seek(tp TopicPartition, offset int64) error {
	if m.closed.Load() {
		return ErrClosed
	}
	m.mu.Lock()
	if !m.owned[tp] {
		m.mu.Unlock()
		return fmt.Errorf("group %q: %s is not assigned to this member: %w", m.group, tp, ErrUnknownTopicOrPartition)
	}
	m.mu.Unlock()
	if err := m.reader.Assign([]StartOffset{{tp, offset}}); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.unpositioned, tp)
	delete(m.pending, tp)
	m.consumed[tp], m.processed[tp] = offset, offset
	m.interruptLocked()
	return nil
}

// Commit commits the position after every record the member has handed
// out (Kafka's commitSync()), and returns once the commit is durable. Call
// it after processing them. A member that lost its partitions gets
// ErrCommitFailed.
func (m *Member[R]) Commit(ctx context.Context) error {
	m.mu.Lock()
	offsets := map[TopicPartition]int64{}
	for tp, off := range m.consumed {
		if c, done := m.committed[tp]; m.owned[tp] && !m.unpositioned[tp] && (!done || c != off) {
			offsets[tp] = off
		}
	}
	as := m.commitAsLocked()
	m.mu.Unlock()
	if commitChosenHook != nil {
		commitChosenHook()
	}
	return m.commit(ctx, ctx, offsets, as)
}

// commitChosenHook, set by tests only, runs in Commit between choosing the
// offsets and sending them.
var commitChosenHook func()

// commitAs is the membership a commit is made in: the generation whose
// ownership chose its offsets.
type commitAs struct {
	generation int32
	memberID   string
}

// commitAsLocked is the member's membership now. Read under the same hold
// of m.mu as the offsets it chose: read later, a loss and a rejoin in
// between would send positions of partitions the member no longer owns
// in its new generation, which the coordinator accepts, and the group's
// offsets of those partitions move back (TestRandomSchedule, seed
// 1796440445540926757, run 0).
func (m *Member[R]) commitAsLocked() commitAs {
	return commitAs{generation: m.generation, memberID: m.memberID}
}

// CommitOffsets commits the given positions (the offsets of the next
// records to read) and returns once they are durable.
func (m *Member[R]) CommitOffsets(ctx context.Context, offsets map[TopicPartition]int64) error {
	m.mu.Lock()
	as := m.commitAsLocked()
	m.mu.Unlock()
	return m.commit(ctx, ctx, offsets, as)
}

// commitProcessed commits the processed positions of tps (nil: every owned
// partition) that moved since the last commit. detached: the commit is not
// abandoned when ctx ends (only the search for a coordinator that moved
// is).
func (m *Member[R]) commitProcessed(ctx context.Context, tps []TopicPartition, detached bool) error {
	m.mu.Lock()
	if tps == nil {
		tps = slices.Collect(maps.Keys(m.owned))
	}
	offsets := map[TopicPartition]int64{}
	for _, tp := range tps {
		off, ok := m.processed[tp]
		if ok && m.owned[tp] && !m.unpositioned[tp] {
			if c, done := m.committed[tp]; !done || c != off {
				offsets[tp] = off
			}
		}
	}
	as := m.commitAsLocked()
	m.mu.Unlock()
	callCtx := ctx
	if detached {
		callCtx = context.WithoutCancel(ctx)
	}
	err := m.commit(callCtx, ctx, offsets, as)
	if err != nil {
		m.logger.Warn("group: committing processed offsets", "group", m.group, "err", err)
	}
	return err
}

// errAutoCommitDue is the cause with which a waiting fetch is woken for
// the auto-commit.
var errAutoCommitDue = errors.New("group: auto-commit due")

// autoCommitDueLocked returns how long until the auto-commit is due, if
// there is processed progress it would commit.
func (m *Member[R]) autoCommitDueLocked() (time.Duration, bool) {
	if m.opts.DisableAutoCommit {
		return 0, false
	}
	for tp, off := range m.processed {
		if c, ok := m.committed[tp]; m.owned[tp] && (!ok || c != off) {
			return max(time.Until(m.nextAutoCommit), 0), true
		}
	}
	return 0, false
}

// maybeAutoCommit commits what was processed when the interval is up.
func (m *Member[R]) maybeAutoCommit(ctx context.Context) {
	if m.opts.DisableAutoCommit {
		return
	}
	m.mu.Lock()
	due := !time.Now().Before(m.nextAutoCommit)
	if due {
		m.nextAutoCommit = time.Now().Add(m.opts.AutoCommitInterval)
	}
	m.mu.Unlock()
	if due {
		_ = m.commitProcessed(ctx, nil, false) // logged; a fencing is handled by the next step of Poll
	}
}

// commit sends an OffsetCommit with the member's id and generation, under
// ctx; findCtx bounds the search for a coordinator that moved.
func (m *Member[R]) commit(ctx, findCtx context.Context, offsets map[TopicPartition]int64, as commitAs) error {
	if len(offsets) == 0 {
		return nil
	}
	req := &OffsetCommitRequest{Group: m.group, GenerationID: as.generation, MemberID: as.memberID, InstanceID: m.opts.InstanceID}
	if req.MemberID == "" || req.GenerationID < 0 {
		if m.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("%w: group %q: the member is not in a generation: %w", ErrCommitFailed, m.group, ErrUnknownMemberID)
	}
	tps := sortedPartitions(slices.Collect(maps.Keys(offsets)))
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			req.Topics = append(req.Topics, OffsetCommitTopic{Topic: tp.Topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, OffsetCommitPartition{Partition: tp.Partition, Offset: offsets[tp], LeaderEpoch: -1})
	}
	resp, err := withCoordinator(findCtx, m, func(c *Coordinator) (*OffsetCommitResponse, error) { return c.OffsetCommit(ctx, req) })
	if err != nil {
		m.onRequestError(err, req.MemberID, req.GenerationID)
		if fencingError(err) || errors.Is(err, ErrRebalanceInProgress) {
			return fmt.Errorf("%w: %w", ErrCommitFailed, err)
		}
		return err
	}
	m.mu.Lock()
	// Recorded only while the member is still in the generation it
	// committed in: a partition lost and owned again since starts afresh.
	same := m.generation == as.generation && m.memberID == as.memberID
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if tp := (TopicPartition{t.Topic, p.Partition}); p.Err == nil && same && m.owned[tp] {
				m.committed[tp] = offsets[tp]
			}
		}
	}
	m.mu.Unlock()
	return resp.Err()
}

// heartbeatLoop heartbeats every HeartbeatInterval, and at once when the
// group's membership changes or a rebalance of this member ends.
func (m *Member[R]) heartbeatLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.opts.HeartbeatInterval)
	defer t.Stop()
	w := m.coordinator().watch(m.group)
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-w:
		case <-m.kick:
		}
		m.mu.Lock()
		freeze := m.freeze
		m.mu.Unlock()
		if freeze != nil {
			select {
			case <-freeze:
			case <-m.stop:
				return
			}
		}
		// Take the next change's channel before the heartbeat looks at
		// the group: a change while it is in flight still wakes the loop.
		// Of the current coordinator: follow kicks the loop when it
		// switches, so the new one's group is watched from then on.
		w = m.coordinator().watch(m.group)
		m.heartbeatOnce()
	}
}

// heartbeatOnce sends one heartbeat and acts on its answer; it also leaves
// the group when the application stopped polling for longer than
// RebalanceTimeout, and makes a leader rejoin when a subscribed topic's
// partition count changed since its assignment.
func (m *Member[R]) heartbeatOnce() {
	m.mu.Lock()
	if m.inRebalance || m.memberID == "" || m.generation < 0 || m.fatal != nil || m.fenced != nil {
		m.mu.Unlock()
		return
	}
	stalled := !m.inPoll && time.Since(m.lastPoll) > m.opts.RebalanceTimeout
	req := &HeartbeatRequest{Group: m.group, GenerationID: m.generation, MemberID: m.memberID, InstanceID: m.opts.InstanceID}
	leader, counts := m.leader, m.partitionCounts
	// A generation that withheld partitions and in which no member
	// rejoined within a heartbeat interval (their owner would have at
	// once) gets the follow-up rebalance from the leader. Not sooner: an
	// immediate one would cut off the members still syncing.
	followUp := leader && m.withheldGen == m.generation && time.Since(m.withheldAt) >= m.opts.HeartbeatInterval
	if followUp {
		m.withheldGen = -1
	}
	m.mu.Unlock()
	ctx := context.Background()
	if stalled {
		m.logger.Warn("group: the application did not poll within the rebalance timeout; leaving the group",
			"group", m.group, "member", req.MemberID, "rebalanceTimeout", m.opts.RebalanceTimeout)
		if m.opts.InstanceID == "" {
			_, _ = m.coordinator().LeaveGroup(ctx, &LeaveGroupRequest{Group: m.group, Members: []LeaveGroupMember{{MemberID: req.MemberID, Reason: "poll timeout"}}})
		}
		m.onRequestError(fmt.Errorf("group %q: poll timeout: %w", m.group, ErrUnknownMemberID), req.MemberID, req.GenerationID)
		return
	}
	c := m.coordinator()
	err := c.Heartbeat(ctx, req)
	switch {
	case err != nil && m.opts.FindCoordinator != nil && coordinatorMoved(err):
		// One look for the group's coordinator per heartbeat; a switch
		// (or the backoff, when there is none yet) kicks the next one.
		if m.follow(m.stopCtx, c, err) == nil {
			m.kickHeartbeat()
		}
	case err == nil:
		if leader && m.partitionsChanged(counts) {
			m.onRequestError(fmt.Errorf("group %q: partitions of a subscribed topic changed: %w", m.group, ErrRebalanceInProgress), req.MemberID, req.GenerationID)
		} else if followUp {
			m.logger.Info("group: partitions withheld by the last assignment are still unassigned; rebalancing",
				"group", m.group, "generation", req.GenerationID)
			m.onRequestError(fmt.Errorf("group %q: withheld partitions: %w", m.group, ErrRebalanceInProgress), req.MemberID, req.GenerationID)
		}
	case errors.Is(err, ErrRebalanceInProgress), fencingError(err), errors.Is(err, ErrClosed):
		m.onRequestError(err, req.MemberID, req.GenerationID)
	default:
		m.logger.Warn("group: heartbeat", "group", m.group, "err", err)
	}
}

// partitionsChanged reports whether a subscribed topic's partition count
// differs from what the last assignment saw.
func (m *Member[R]) partitionsChanged(counts map[string]int32) bool {
	for _, t := range m.opts.Topics {
		n, err := m.coordinator().topics.Partitions(t)
		if err != nil {
			n = 0
		}
		if counts[t] != n {
			return true
		}
	}
	return false
}

// Close leaves the group: a Poll in progress returns ErrClosed; with
// auto-commit the position after every record handed out is committed (so
// call Close after processing them); OnRevoked runs for the partitions the
// member owns; then a dynamic member sends LeaveGroup so the group
// rebalances at once. A static member does not leave: the group keeps its
// partitions for it until its session times out. Close stops the
// heartbeat. It is idempotent; later calls return ErrClosed. It must not
// be called from a callback.
func (m *Member[R]) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	m.mu.Lock()
	if m.pollCancel != nil {
		m.pollCancel(ErrClosed)
	}
	m.mu.Unlock()
	m.pollMu.Lock()
	defer m.pollMu.Unlock()
	m.mu.Lock()
	m.closing = true
	// A member with an id but no generation yet (its join was cut short)
	// is in the group too, waiting: it leaves as well.
	member := m.memberID != "" && m.fenced == nil && m.fatal == nil
	inGeneration := member && m.generation >= 0
	owned := sortedPartitions(slices.Collect(maps.Keys(m.owned)))
	m.mu.Unlock()
	ctx := context.Background()
	if m.opts.FindCoordinator != nil {
		// The commit and LeaveGroup may have to wait for a coordinator
		// to be elected: not for ever.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, closeTimeout)
		defer cancel()
	}
	var errs []error
	if inGeneration {
		if !m.opts.DisableAutoCommit {
			if err := m.Commit(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if len(owned) > 0 && m.opts.OnRevoked != nil {
			m.opts.OnRevoked(ctx, owned)
		}
	} else if len(owned) > 0 && m.opts.OnLost != nil {
		m.opts.OnLost(ctx, owned)
	}
	if len(owned) > 0 {
		if err := m.reader.Unassign(owned); err != nil {
			errs = append(errs, err)
		}
	}
	if member {
		m.leaveQuietly(ctx)
	}
	close(m.stop)
	m.stopCancel()
	m.wg.Wait()
	m.mu.Lock()
	m.dropLocked(owned)
	m.memberID, m.generation = "", -1
	m.mu.Unlock()
	return errors.Join(errs...)
}

// leaveQuietly sends LeaveGroup for a dynamic member, logging a failure.
func (m *Member[R]) leaveQuietly(ctx context.Context) {
	m.mu.Lock()
	id := m.memberID
	m.mu.Unlock()
	if id == "" || m.opts.InstanceID != "" {
		return
	}
	req := &LeaveGroupRequest{Group: m.group, Members: []LeaveGroupMember{{MemberID: id, Reason: "member closed"}}}
	resp, err := withCoordinator(ctx, m, func(c *Coordinator) (*LeaveGroupResponse, error) { return c.LeaveGroup(ctx, req) })
	if err == nil && len(resp.Members) > 0 {
		err = resp.Members[0].Err
	}
	if err != nil {
		m.logger.Warn("group: leaving the group", "group", m.group, "member", id, "err", err)
	}
}

// closeTimeout bounds the commit and LeaveGroup of Close for a member that
// follows its coordinator, while it looks for one: Kafka's consumer close
// timeout (30 s).
const closeTimeout = 30 * time.Second

// coordinator returns the coordinator the member talks to now.
func (m *Member[R]) coordinator() *Coordinator { return m.coord.Load() }

// coordinatorMoved reports whether err says that the coordinator asked is
// not the group's now: it does not own the group's offsets partition
// (NOT_COORDINATOR), is loading it (COORDINATOR_LOAD_IN_PROGRESS), is
// closed, or has none to offer (COORDINATOR_NOT_AVAILABLE: a group it
// dropped, or a commit whose replication failed). A Kafka client looks for
// the coordinator again on each.
func coordinatorMoved(err error) bool {
	return errors.Is(err, ErrNotCoordinator) || errors.Is(err, ErrCoordinatorLoadInProgress) ||
		errors.Is(err, ErrCoordinatorNotAvailable) || errors.Is(err, ErrClosed)
}

// withCoordinator runs call against the member's coordinator. With
// FindCoordinator, while call's error says the coordinator is not the
// group's (coordinatorMoved), it finds the group's coordinator (follow)
// and calls again, until ctx ends: then it returns call's last error
// wrapped with ctx's. Without FindCoordinator it calls once.
func withCoordinator[R, T any](ctx context.Context, m *Member[R], call func(c *Coordinator) (T, error)) (T, error) {
	for {
		c := m.coordinator()
		v, err := call(c)
		if err == nil || m.opts.FindCoordinator == nil || !coordinatorMoved(err) {
			return v, err
		}
		if ferr := m.follow(ctx, c, err); ferr != nil {
			return v, fmt.Errorf("%w (looking for the group's coordinator: %w)", err, ferr)
		}
	}
}

// follow asks FindCoordinator for the group's coordinator after from
// answered cause, and switches the member to the answer if it is another:
// the heartbeat is kicked so that it watches and heartbeats the new one.
// When the answer is from again (still loading, or the leadership has not
// moved yet) or an error (no leader now), it waits RetryBackoff, or until
// ctx ends (its cause is returned). An answer matching ErrClosed stops the
// member: its own side is closing.
func (m *Member[R]) follow(ctx context.Context, from *Coordinator, cause error) error {
	c, err := m.opts.FindCoordinator(ctx)
	if err != nil && errors.Is(err, ErrClosed) {
		m.mu.Lock()
		m.setFatalLocked(err)
		m.mu.Unlock()
		return err
	}
	if err == nil && c != nil && c != from {
		// Compare-and-swap: of two calls that saw from fail, the second
		// must not undo a switch the first made.
		if m.coord.CompareAndSwap(from, c) {
			m.logger.Info("group: following the group's coordinator", "group", m.group, "cause", cause)
			m.kickHeartbeat()
		}
		return nil
	}
	if err != nil {
		m.logger.Debug("group: no coordinator available", "group", m.group, "cause", cause, "err", err)
	}
	t := time.NewTimer(RetryBackoff)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// findFirst asks find for the group's first coordinator, every
// RetryBackoff until it names one or ctx ends.
func findFirst(ctx context.Context, groupID string, find func(context.Context) (*Coordinator, error)) (*Coordinator, error) {
	for {
		c, err := find(ctx)
		if err == nil && c != nil {
			return c, nil
		}
		if err != nil && errors.Is(err, ErrClosed) {
			return nil, err
		}
		t := time.NewTimer(RetryBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = fmt.Errorf("group %q: no coordinator: %w", groupID, ErrCoordinatorNotAvailable)
			}
			return nil, fmt.Errorf("%w (looking for the group's coordinator: %w)", err, context.Cause(ctx))
		}
	}
}

// kickHeartbeat makes the heartbeat loop send one at once.
func (m *Member[R]) kickHeartbeat() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}
