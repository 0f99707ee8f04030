package log

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// State is what the data directory's owner checkpoints for one log (in one
// file for all partitions, never per append) and hands back to Open.
type State struct {
	// RecoveryPoint is the offset below which every record is known to be
	// fsynced. After an unclean shutdown only the segments from the one
	// holding it onwards are scanned and repaired.
	RecoveryPoint int64
	// LogStartOffset is the first offset readers may see. Records below it
	// that still sit in segments stay hidden (DeleteRecordsBefore).
	LogStartOffset int64
	// HighWatermark is restored only with Options.ExternalHighWatermark
	// (a replica resumes from it); otherwise the log derives its own.
	HighWatermark int64
	// FirstDirtyOffset is the cleaner checkpoint of a compacted log (Kafka's
	// cleaner-offset-checkpoint): every record below it has been through a
	// cleaning pass. Open clamps it to the log's range. Losing it (zero)
	// costs a cleaning of the whole log and keeps tombstones longer; a value
	// above the truth would let the cleaner drop a tombstone early, which
	// is why Checkpoint reports it only once the pass that moved it is
	// durable. After TruncateTo, checkpoint again before relying on it.
	FirstDirtyOffset int64
	// Clean tells Open that the log was closed cleanly (the owner found its
	// clean-shutdown marker): nothing is scanned. Checkpoint reports true
	// only after a successful Close.
	Clean bool
}

// segEntry is one segment in the log's btree, keyed by base offset.
type segEntry struct {
	capEntry
	base int64
	seg  *segment.Segment
	// cut is the damage a read found and cut (see repairSealed), for the
	// reports of the range it cost; nil for none.
	cut atomic.Pointer[errs.Corruption]
	// filled lists the damaged ranges inside seg that a read's repair
	// passed over, keeping the batches after them (see repairSealed);
	// nil for none.
	filled atomic.Pointer[[]filledRange]
	// damaged lists the damaged batches reads located in seg (see
	// damage.go), nil for none. With damage known, a read whose lookup by
	// offset lands on a damaged batch past its range (a damaged last
	// offset claims the offset) or starts past the offset (a damaged
	// length may have passed over valid batches) is checked by a walk.
	damaged atomic.Pointer[[]damageAt]
}

// damageAt is a damaged batch a read located: its byte position and the
// offset where reading resumes after it.
type damageAt struct{ pos, resume int64 }

func lessEntry(a, b *segEntry) bool { return a.base < b.base }

// snapshot is what readers work on: an immutable clone of the segment tree
// and the log start offset, published together so that a deletion and the
// start offset it implies become visible at once.
type snapshot struct {
	segs  *btree.BTreeG[*segEntry]
	start int64
	// bases lists segs in order of base offset, for the readers' floor
	// lookup: a binary search of it allocates nothing, where a btree
	// descent needs a heap-allocated pivot per read. Building it costs a
	// pass over the segments per publication (rolls, deletions,
	// truncations, compaction passes), never per read.
	bases []*segEntry
}

// newSnapshot returns the snapshot of tree, which must not change
// afterwards: a clone of the master copy (a read-only log's tree, which
// it never fills, stays empty).
func newSnapshot(tree *btree.BTreeG[*segEntry], start int64) *snapshot {
	bases := make([]*segEntry, 0, tree.Len())
	tree.Ascend(func(e *segEntry) bool {
		bases = append(bases, e)
		return true
	})
	return &snapshot{segs: tree, start: start, bases: bases}
}

// mark is a point in the log: an offset and the byte position it has in the
// segment with base segBase. The high watermark is a mark so that a reader
// can bound its read in bytes without a lookup.
type mark struct {
	offset  int64
	segBase int64
	pos     int64
}

// Log is one partition's log: an ordered set of segments in one directory,
// one appender at a time and any number of readers that take no lock the
// appender holds. See the package documentation for the model.
type Log struct {
	fs  vfs.FS
	dir string
	// opts are the options the log opened with. The live settings
	// (Reconfigure) are read from live instead: opts keeps the ones that
	// never change while the log is open.
	opts Options
	// live holds the options in force (reconfigure.go); never nil after
	// Open.
	live atomic.Pointer[liveOptions]
	// reconfMu serialises Reconfigure and SetRetention, and Close's
	// detaching from the cleaner. Lock order: reconfMu, then appendMu
	// (and the cleaner's locks).
	reconfMu sync.Mutex
	caps     *ResourceCaps

	// appendMu serialises appends and guards the fields up to syncMu. It is
	// held while batches are written to the active segment, never across an
	// fsync: a roll drops it while the next segment's files are created
	// and the directory fsynced, a truncation while files are cut and
	// deleted; busy keeps appenders, other truncations and Close out
	// meanwhile, while readers and group commits go on.
	appendMu    sync.Mutex
	idle        sync.Cond // signalled when busy turns false; L is &appendMu
	busy        bool
	syncWaiters int                      // appenders and Sync callers between reading truncGen and their ack
	truncs      []truncation             // truncations since the oldest of syncWaiters began; written with syncMu held too, so either lock reads it
	tree        *btree.BTreeG[*segEntry] // master copy; readers use snap
	active      *segEntry
	activated   bool        // active holds its write handle (see loadLast)
	pending     []*segEntry // rolled past but not sealed yet, oldest first
	next        int64       // the log end offset
	endMark     mark        // next, in the active segment at its size
	durMark     mark        // the durable end as a mark
	extHW       mark        // the high watermark set by SetHighWatermark
	extHWSet    bool        // SetHighWatermark was called since Open
	extHWEpoch  int32       // the leader epoch of the last SetHighWatermark
	armed       bool        // FlushInterval: a flush is scheduled
	activeAt    time.Time   // when the active segment was created or reopened
	closing     bool
	// hwFloor, when hwFloorSet, is the high watermark's floor under
	// FlushSync after a change to it from a weaker policy: the records
	// already visible then stay visible until the durable end passes it.
	hwFloor    mark
	hwFloorSet bool

	// syncMu orders fsyncs against seals and truncations. A group commit
	// that only fsyncs the active segment's .log holds it shared, so that
	// up to maxFlushes of them overlap (see syncTo); seals, truncations,
	// retention's deletions and Close hold it exclusively. Lock order:
	// syncMu, then appendMu.
	syncMu sync.RWMutex

	// flushMu guards flushes, flushCovers, flushDone and syncing: how many group
	// commits appenders lead, the largest log end one of them covers, and
	// the channel closed when one ends (see syncTo). It is held only to
	// read or change them, never with another lock.
	flushMu     sync.Mutex
	flushes     int
	flushCovers int64
	flushDone   chan struct{}
	syncing     []*fsyncRun // the fsyncs of the active .log under way (syncActive)

	// retentionMu serialises retention passes, DeleteRecordsBefore,
	// TruncateTo and the end of Close, so that no two of them delete the
	// same segments. Lock order: retentionMu, syncMu, appendMu.
	retentionMu sync.Mutex

	// firstWriteMu serialises the BeforeFirstWrite hook and the setting of
	// firstWriteDone. Nothing but the hook runs while it is held (it may be
	// taken with retentionMu held).
	firstWriteMu   sync.Mutex
	firstWriteDone atomic.Bool

	// epochs is the leader-epoch cache (epochs.go).
	epochs epochCache
	// epochFileMu serialises writes of the leader-epoch checkpoint
	// (persistEpochs): two group commits may flush at once.
	epochFileMu sync.Mutex

	// cmp is the compaction state (compact.go).
	cmp compactor

	snap       atomic.Pointer[snapshot]
	end        atomic.Int64 // next, for readers
	durable    atomic.Int64 // durMark.offset, for readers
	hw         atomic.Pointer[mark]
	endPub     markSeq // endMark, for readers bounded by the log end
	hwWake     *notifier
	endWake    *notifier // waiters for the log end (WaitEndFunc)
	epoch      atomic.Int32
	truncGen   atomic.Int64 // bumped by every truncation; written under syncMu and appendMu
	failure    atomic.Pointer[error]
	closed     atomic.Bool
	cleanClose atomic.Bool
	// repairMu serialises the reads' repairs of damaged sealed segments
	// (repairSealed), which are rare: a second reader of the segment
	// waits, then finds it repaired.
	repairMu sync.Mutex
	// idxUnsynced are the index files an unclean Open's recovery found
	// right and left unsynced (segment.RecoverDeferIndexSync), fsynced
	// after Open by one goroutine (and by Close if that failed). Until
	// they are, idxFloor (else -1), the base of the first segment they
	// belong to, caps the RecoveryPoint Checkpoint reports, so that a
	// power cut meanwhile has the next Open scan those segments again.
	idxUnsynced []string
	idxFloor    atomic.Int64
	openSealed  atomic.Int64 // this log's segments holding files under the caps, the active one included
	syncs       atomic.Int64
	rolls       atomic.Int64
	// retentionErrors counts failed scheduled retention passes.
	retentionErrors atomic.Int64

	recovery RecoveryReport

	// ro is the state of a log opened with Options.ReadOnly, nil otherwise.
	ro *roLog
	// fsyncs times the fsyncs and seals the log waits on (Stats.Fsync).
	fsyncs fsyncRecorder

	quit      chan struct{}
	wg        sync.WaitGroup
	sealKick  chan struct{}
	flushKick chan struct{}
}

// RecoveryReport says what Open did to the directory.
type RecoveryReport struct {
	// Clean is true when Open trusted the last shutdown and scanned nothing.
	Clean bool
	// SegmentsScanned counts the segments Recover checked batch by batch.
	SegmentsScanned int
	// BytesScanned is the size of the scanned segments before any cut.
	BytesScanned int64
	// BytesCut counts the bytes removed from torn or corrupt tails.
	BytesCut int64
	// SegmentsRemoved counts whole segments removed: after a cut, or
	// leftovers of a crash (.deleted, .cleaned, orphaned index files).
	SegmentsRemoved int
	// FilesRemoved lists the leftover files removed by name.
	FilesRemoved []string
	// Damage lists what Open found damaged or foreign and set aside, each
	// naming the file and saying what Open did (an error matching
	// ErrCorrupt, an *errs.Corruption under errors.As): a leftover
	// .log.swap no swap-commit marker vouches for, discarded with the live
	// segments kept; a damaged marker. The owner logs them as warnings.
	Damage []error
	// EpochCheckpoint is the damage found in the leader-epoch checkpoint
	// (an *errs.Corruption naming the file), nil if it read well or was
	// missing.
	EpochCheckpoint error
	// EpochsRebuilt is set when the leader-epoch cache was rebuilt from
	// the log's batches because its file was missing or damaged.
	EpochsRebuilt bool
}

// Stats are counters of one log.
type Stats struct {
	Segments           int   // segments in the log
	OpenSealedSegments int64 // segments now holding files under the caps, the active one included (see ResourceCaps)
	Syncs              int64 // group commits and seals that fsynced
	Rolls              int64 // segments rolled since Open
	IndexRebuilds      int64 // indexes rebuilt from .log files, summed over segments
	RetentionErrors    int64 // scheduled retention passes that failed
	// Bytes is the size of the log's segments (their .log files) summed:
	// what the log holds on disk, indexes aside. Of a read-only log, the
	// last segment counts up to its valid end.
	Bytes int64
	// Fsync times the fsyncs the log waited on (none for a read-only log).
	Fsync FsyncStats
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset the log serves.
func (l *Log) LogStartOffset() int64 { return l.snap.Load().start }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.end.Load() }

// Truncations counts the truncations (TruncateTo, TruncateFullyAndStartAt)
// since Open. A reader that keeps bytes it read, to hand out later, reads
// it before the read and compares it before using them: while it has not
// moved, no byte it read was cut from the log or written over.
func (l *Log) Truncations() int64 { return l.truncGen.Load() }

// Closed reports whether Close has begun: reads now fail with ErrClosed.
func (l *Log) Closed() bool { return l.closed.Load() }

// DurableEndOffset is the offset below which every record is fsynced (the
// recovery point).
func (l *Log) DurableEndOffset() int64 { return l.durable.Load() }

// HighWatermark is the offset below which records are visible to readers.
// On one node it is the durable end under FlushSync and the log end under
// the other policies; with Options.ExternalHighWatermark it is what
// SetHighWatermark set, never beyond that limit.
func (l *Log) HighWatermark() int64 { return l.hw.Load().offset }

// LeaderEpoch is the epoch Append stamps on batches: the one
// SetLeaderEpoch set, raised by AppendFollower to the epochs it copies, and
// at Open the latest in the log's leader-epoch cache (0 without one).
func (l *Log) LeaderEpoch() int32 { return l.epoch.Load() }

// SetLeaderEpoch sets the partition leader epoch stamped on batches
// appended from now on, as a broker does when it becomes the leader: the
// epoch joins the leader-epoch cache at the log end at once (so that
// EndOffsetForEpoch answers for the epoch before it has records), and the
// cache is written durably before SetLeaderEpoch returns. An epoch below
// the latest of the log's lineage is refused (ErrEpochRegressed); the
// latest again changes nothing.
func (l *Log) SetLeaderEpoch(epoch int32) error {
	if l.ro != nil {
		return l.readOnlyErr("SetLeaderEpoch")
	}
	if epoch < 0 {
		return fmt.Errorf("%w: epoch %d", ErrEpochRegressed, epoch)
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.lockAppend()
	if err := l.appendErrLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	if latest := l.epochs.latest.Load(); epoch < latest {
		l.appendMu.Unlock()
		return fmt.Errorf("%w: %d, the log is at epoch %d (%s)", ErrEpochRegressed, epoch, latest, l.dir)
	}
	l.epochs.assign(epoch, l.next)
	l.epoch.Store(epoch)
	l.appendMu.Unlock()
	if err := l.persistEpochs(); err != nil {
		return l.fail(err)
	}
	return nil
}

// Recovery reports what Open did to the directory.
func (l *Log) Recovery() RecoveryReport { return l.recovery }

// Checkpoint returns the state the owner should persist for this log (see
// State). It may be called at any time, also after Close.
func (l *Log) Checkpoint() State {
	rp := l.durable.Load()
	if f := l.idxFloor.Load(); f >= 0 && f < rp {
		rp = f // recovered segments whose indexes are not yet durable
	}
	return State{
		RecoveryPoint:  rp,
		LogStartOffset: l.snap.Load().start,
		HighWatermark:  l.hw.Load().offset,
		Clean:          l.cleanClose.Load(),

		FirstDirtyOffset: l.cmp.firstDirty.Load(),
	}
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	st := Stats{
		OpenSealedSegments: l.openSealed.Load(),
		Syncs:              l.syncs.Load(),
		Rolls:              l.rolls.Load(),
		RetentionErrors:    l.retentionErrors.Load(),
		Fsync:              l.fsyncs.stats(),
	}
	sn := l.snap.Load()
	st.Bytes = l.bytesOf(sn)
	st.Segments = sn.segs.Len()
	sn.segs.Ascend(func(e *segEntry) bool {
		st.IndexRebuilds += e.seg.IndexRebuilds()
		return true
	})
	return st
}

// err returns why the log refuses writes, or nil.
func (l *Log) err() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if p := l.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail puts the log in the failed state (the first cause wins) and returns
// the error appenders get from now on.
func (l *Log) fail(cause error) error {
	werr := fmt.Errorf("%w: %w", ErrFailed, markCorrupt(cause))
	if l.failure.CompareAndSwap(nil, &werr) {
		return werr
	}
	return *l.failure.Load()
}

// beforeWrite runs the BeforeFirstWrite hook if no write happened since
// Open. Every path that changes the directory calls it first, holding no
// other lock of the log.
func (l *Log) beforeWrite() error {
	if l.ro != nil {
		return l.readOnlyErr("write")
	}
	if l.firstWriteDone.Load() {
		return nil
	}
	l.firstWriteMu.Lock()
	defer l.firstWriteMu.Unlock()
	if l.firstWriteDone.Load() {
		return nil
	}
	if h := l.opts.BeforeFirstWrite; h != nil {
		if err := h(); err != nil {
			return fmt.Errorf("log: BeforeFirstWrite: %w", err)
		}
	}
	l.firstWriteDone.Store(true)
	return nil
}

// lockAppend takes appendMu once no roll or truncation is in progress.
func (l *Log) lockAppend() {
	l.appendMu.Lock()
	for l.busy {
		l.idle.Wait()
	}
}

// publishLocked installs a fresh reader snapshot of the tree. appendMu must
// be held.
func (l *Log) publishLocked(start int64) {
	l.epochs.truncateFromStart(start)
	l.snap.Store(newSnapshot(l.tree.Clone(), start))
}

// publishHWLocked publishes the log end mark to readers, recomputes the
// high watermark from its inputs and wakes waiters if it moved. appendMu
// must be held.
func (l *Log) publishHWLocked() {
	l.endPub.store(l.endMark)
	l.endWake.notify()
	limit := l.endMark
	if l.cur().o.FlushPolicy.mode == flushSync {
		limit = l.durMark
		if l.hwFloorSet {
			switch {
			case l.durMark.offset >= l.hwFloor.offset:
				l.hwFloorSet = false
			case l.hwFloor.offset > l.endMark.offset:
				l.hwFloorSet = false // truncated below it
			default:
				limit = l.hwFloor
			}
		}
	}
	m := limit
	if l.opts.ExternalHighWatermark && l.extHW.offset < limit.offset {
		m = l.extHW
	}
	if cur := l.hw.Load(); cur != nil && *cur == m {
		return
	}
	l.hw.Store(&m)
	l.hwWake.notify()
}

// Close flushes and closes the log: rolled segments are sealed, the active
// one is sealed too (fsynced, indexes trimmed), the background goroutine
// stops, files are closed, and waiters return ErrClosed. Views already
// handed out stay valid until released. After a successful Close of a log
// that had not failed, Checkpoint reports Clean and the recovery point is
// the log end. Close is idempotent; later calls return ErrClosed.
//
// A failed log is closed without flushing: what it wrote after the failure
// is not trusted, and the next Open (not Clean) recovers it.
func (l *Log) Close() error {
	if l.ro != nil {
		return l.closeReadOnly()
	}
	l.lockAppend()
	if l.closing {
		l.appendMu.Unlock()
		return ErrClosed
	}
	l.closing = true
	l.appendMu.Unlock()

	close(l.quit)
	l.wg.Wait()
	l.stopCompaction()
	idxErr := l.syncRecoveredIndexes() // nothing left unless the first try failed

	l.retentionMu.Lock()
	defer l.retentionMu.Unlock()
	l.syncMu.Lock()
	var errs []error
	sealed := false
	if l.failure.Load() == nil {
		// An active segment never written to since Open is still sealed.
		if err := l.flushLocked(true); err != nil {
			errs = append(errs, err)
		} else if l.activated {
			if err := l.seal(l.active.seg); err != nil {
				errs = append(errs, l.fail(fmt.Errorf("log: seal %s: %w", l.active.seg, err)))
			} else {
				sealed = true
			}
		} else {
			sealed = true
		}
	}
	l.closed.Store(true)
	l.syncMu.Unlock()
	l.hwWake.broadcast()
	l.endWake.broadcast()
	if sealed {
		l.repairAtClose()
	}

	l.appendMu.Lock()
	var all []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		all = append(all, e)
		return true
	})
	l.appendMu.Unlock()
	for _, e := range all {
		l.caps.forget(&e.capEntry)
		if err := e.seg.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if idxErr != nil {
		errs = append(errs, idxErr) // not clean: the next Open recovers them
	}
	err := errors.Join(errs...)
	if err == nil && l.failure.Load() == nil {
		l.cleanClose.Store(true)
	}
	return err
}

// syncRecoveredIndexes fsyncs the index files recovery left unsynced and
// then lifts the cap on the checkpointed recovery point. A file gone since
// (its segment deleted or replaced) needs nothing. On an error the cap
// stays and the files are tried again by Close.
func (l *Log) syncRecoveredIndexes() error {
	for len(l.idxUnsynced) > 0 {
		path := l.idxUnsynced[0]
		if err := segment.SyncPath(l.fs, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log: recovered index: %w", err)
		}
		l.idxUnsynced = l.idxUnsynced[1:]
	}
	l.idxUnsynced = nil
	l.idxFloor.Store(-1)
	return nil
}

// goFunc runs fn on a goroutine that Close waits for.
func (l *Log) goFunc(fn func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
}

// background is the log's one goroutine: it seals rolled segments, runs
// FlushInterval's flushes and the retention schedule.
func (l *Log) background() {
	var retention <-chan time.Time
	if l.opts.RetentionCheckInterval > 0 {
		t := time.NewTicker(l.opts.RetentionCheckInterval)
		defer t.Stop()
		retention = t.C
	}
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-l.sealKick:
			l.sealPending()
		case <-l.flushKick:
			flush.Reset(l.cur().o.FlushPolicy.interval)
		case <-flush.C:
			_ = l.Sync() // a failure puts the log in the failed state
		case <-retention:
			if _, err := l.EnforceRetention(l.opts.Now()); err != nil && !errors.Is(err, ErrClosed) {
				// Nothing waits on the schedule to hand the error to;
				// Stats counts it, and the next pass tries again.
				l.retentionErrors.Add(1)
			}
		}
	}
}

// kick sends a non-blocking wake-up on a one-slot channel.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
