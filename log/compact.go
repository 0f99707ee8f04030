package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// compactor is a Log's compaction state.
type compactor struct {
	// cleaner runs the passes of a log opened with Options.Compact, or
	// turned compacted by Reconfigure; nil otherwise. Set once, under
	// Log.reconfMu (or by Open), read anywhere. private: the log made it
	// and closes it (written with cleaner, read after a load of it).
	cleaner atomic.Pointer[Cleaner]
	private bool

	// cleanMu serialises the cleaning passes of the log, the cleaner's
	// and Compact's. Lock order: cleanMu, then retentionMu.
	cleanMu sync.Mutex

	// firstDirty is the cleaner checkpoint: every record below it has been
	// through a cleaning pass. Written under cleanMu and (to pull it back)
	// appendMu; read anywhere.
	firstDirty atomic.Int64

	passes            atomic.Int64
	recordsRemoved    atomic.Int64
	tombstonesRemoved atomic.Int64
	bytesRead         atomic.Int64
	bytesWritten      atomic.Int64
}

// initCompaction sets the cleaner checkpoint from the state the owner
// checkpointed and, for a compacted log, attaches it to its cleaner. It runs
// at the end of Open.
func (l *Log) initCompaction(st State) error {
	start, end := l.snap.Load().start, l.next
	l.cmp.firstDirty.Store(min(max(st.FirstDirtyOffset, start), end))
	if !l.cur().o.Compact {
		return nil
	}
	c := l.opts.Cleaner
	if c == nil {
		var err error
		if c, err = newCleaner(nil); err != nil {
			return err
		}
		l.cmp.private = true
		if !l.opts.noBackground {
			c.start()
		}
	}
	l.cmp.cleaner.Store(c)
	if !l.opts.noBackground {
		c.register(l)
	}
	return nil
}

// stopCompaction detaches the log from its cleaner and waits for a pass
// under way (which l.quit, closed by now, stops), so that Close can close
// the segments. A private cleaner is closed.
func (l *Log) stopCompaction() {
	// reconfMu: a Reconfigure under way finishes attaching its cleaner
	// first, and none starts after (it sees closing).
	l.reconfMu.Lock()
	defer l.reconfMu.Unlock()
	c := l.cmp.cleaner.Load()
	if c == nil {
		return
	}
	c.unregister(l)
	l.cmp.cleanMu.Lock()
	//lint:ignore SA2001 a barrier: the lock is taken only to wait out a pass under way
	l.cmp.cleanMu.Unlock()
	if l.cmp.private {
		_ = c.Close()
	}
}

// kickCleaner tells the cleaner that the log sealed a segment, which is
// when its dirty ratio grows.
func (l *Log) kickCleaner() {
	if c := l.cmp.cleaner.Load(); c != nil {
		c.kick()
	}
}

// pullBackFirstDirty keeps the cleaner checkpoint within the log after a
// truncation to end. appendMu must be held.
func (l *Log) pullBackFirstDirtyLocked(end int64) {
	if l.cmp.firstDirty.Load() > end {
		l.cmp.firstDirty.Store(end)
	}
}

// checkKeys refuses a batch holding a record without a key: a compacted log
// keeps the latest record of each key, and a record without one has no
// place in it (Kafka refuses them at produce time for compacted topics).
// Control batches (transaction markers) are exempt.
func checkKeys(b record.Batch) error {
	if b.IsControl() {
		return nil
	}
	it := b.Records(decodeOptionsFor(b))
	defer it.Close()
	for i := 0; it.Next(); i++ {
		if it.Record().KeyIsNull() {
			return fmt.Errorf("%w: record %d of the batch", ErrNoKey, i)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return nil
}

// decodeOptionsFor bounds the decoding of a batch already accepted into, or
// being appended to, the log: its own size, and a decompressed size far
// above any real compression ratio (the record package's defaults would
// refuse a batch above 64 MiB that Options allowed).
func decodeOptionsFor(b record.Batch) *record.DecodeOptions {
	return &record.DecodeOptions{
		MaxBatchBytes:        max(len(b), record.DefaultMaxBatchBytes),
		MaxDecompressedBytes: int(min(max(int64(len(b))*64, record.DefaultMaxDecompressedBytes), math.MaxInt32)),
	}
}

// CompactResult says what Compact (or one pass) did.
type CompactResult struct {
	// Passes counts the cleaning passes; more than one when the cleaner's
	// map could not hold every key of the dirty part at once.
	Passes int
	// FirstDirtyOffset is the cleaner checkpoint afterwards: the records
	// below it have been cleaned.
	FirstDirtyOffset int64
	// SegmentsCleaned and SegmentsWritten count the segments replaced and
	// those that replaced them (fewer when small ones were merged).
	SegmentsCleaned, SegmentsWritten int
	// BytesRead and BytesWritten are the sizes of the segments replaced and
	// of those written in their place.
	BytesRead, BytesWritten int64
	// RecordsRemoved counts the records dropped: superseded by a later
	// record of the same key, tombstones past DeleteRetention, and records
	// without a key (written before the log was compacted).
	RecordsRemoved int64
	// TombstonesRemoved counts the tombstones among them that were the
	// latest record of their key.
	TombstonesRemoved int64
	// EmptyBatches counts the batches kept with no records, to keep a
	// producer's last sequence or a segment's last offset.
	EmptyBatches int64
	// MapSlots and MapEntries are the size of the largest map a pass built
	// and the keys it held.
	MapSlots, MapEntries int
}

func (r *CompactResult) add(p CompactResult) {
	r.Passes += p.Passes
	r.FirstDirtyOffset = p.FirstDirtyOffset
	r.SegmentsCleaned += p.SegmentsCleaned
	r.SegmentsWritten += p.SegmentsWritten
	r.BytesRead += p.BytesRead
	r.BytesWritten += p.BytesWritten
	r.RecordsRemoved += p.RecordsRemoved
	r.TombstonesRemoved += p.TombstonesRemoved
	r.EmptyBatches += p.EmptyBatches
	r.MapSlots = max(r.MapSlots, p.MapSlots)
	r.MapEntries = max(r.MapEntries, p.MapEntries)
}

// CompactionStats are the compaction counters of a log.
type CompactionStats struct {
	// FirstDirtyOffset is the cleaner checkpoint (State.FirstDirtyOffset).
	FirstDirtyOffset  int64
	Passes            int64
	RecordsRemoved    int64
	TombstonesRemoved int64
	BytesRead         int64
	BytesWritten      int64
}

// CompactionStats returns the log's compaction counters since Open.
func (l *Log) CompactionStats() CompactionStats {
	return CompactionStats{
		FirstDirtyOffset:  l.cmp.firstDirty.Load(),
		Passes:            l.cmp.passes.Load(),
		RecordsRemoved:    l.cmp.recordsRemoved.Load(),
		TombstonesRemoved: l.cmp.tombstonesRemoved.Load(),
		BytesRead:         l.cmp.bytesRead.Load(),
		BytesWritten:      l.cmp.bytesWritten.Load(),
	}
}

// Compact cleans the log now, whatever its dirty ratio: pass after pass
// until every cleanable segment is clean (see the package documentation for
// what a pass does and what is cleanable). It waits for a worker's share of
// its cleaner's memory, and for a pass of the cleaner's on this log to end.
// If ctx ends, or the log or the cleaner is closed, the pass under way is
// abandoned (its files removed, the log unchanged) and Compact returns what
// the passes before it did with the error. A log opened without
// Options.Compact returns ErrNotCompacted, a read-only one ErrReadOnly.
func (l *Log) Compact(ctx context.Context) (CompactResult, error) {
	return l.compactPasses(ctx, math.MaxInt)
}

// compactPasses runs up to maxPasses passes, stopping early once nothing is
// left to clean.
func (l *Log) compactPasses(ctx context.Context, maxPasses int) (CompactResult, error) {
	var res CompactResult
	if l.ro != nil {
		return res, l.readOnlyErr("Compact")
	}
	res.FirstDirtyOffset = l.cmp.firstDirty.Load()
	c := l.cmp.cleaner.Load()
	if c == nil || !l.cur().o.Compact {
		if l.closed.Load() {
			return res, ErrClosed
		}
		return res, ErrNotCompacted
	}
	if err := c.acquire(ctx, l.quit); err != nil {
		return res, err
	}
	defer c.release()
	l.cmp.cleanMu.Lock()
	defer l.cmp.cleanMu.Unlock()
	// Passes go on up to what was cleanable when the first began: with
	// appends going on, segments sealed meanwhile would keep it going.
	target := int64(-1)
	for range maxPasses {
		p, err := l.cleanPass(ctx, c)
		if p != nil {
			// Installed, even if removing the old files failed after.
			res.add(p.res)
			c.passes.Add(1)
			l.cmp.passes.Add(1)
			l.cmp.recordsRemoved.Add(p.res.RecordsRemoved)
			l.cmp.tombstonesRemoved.Add(p.res.TombstonesRemoved)
			l.cmp.bytesRead.Add(p.res.BytesRead)
			l.cmp.bytesWritten.Add(p.res.BytesWritten)
			if target < 0 {
				target = p.pl.bound
			}
		}
		if err != nil {
			return res, err
		}
		if p == nil || l.cmp.firstDirty.Load() >= target {
			break
		}
	}
	return res, nil
}

// cleanable returns the log's dirty ratio, Kafka's cleanable ratio: the
// bytes of the cleanable dirty segments over those plus the clean ones. ok
// is false when the log cannot be cleaned now (closed, failed) or the
// ratio could not be computed.
func (l *Log) cleanable() (ratio float64, ok bool) {
	pl, err := l.planClean(l.opts.Now())
	if err != nil || pl.dirtyBytes == 0 {
		return 0, err == nil
	}
	return float64(pl.dirtyBytes) / float64(pl.cleanBytes+pl.dirtyBytes), true
}

// cleanPlan is what a pass works from: the log's segments as one snapshot
// showed them, and where the clean, cleanable and uncleanable parts lie.
type cleanPlan struct {
	segs  []*segEntry // sealed segments below the uncleanable part, oldest first
	ends  []int64     // ends[i] is the base of the segment after segs[i]
	sizes []int64
	start int64 // log start offset
	// firstDirty is the cleaner checkpoint (at least the first base);
	// bound is the first offset of the uncleanable part, a segment base.
	firstDirty, bound      int64
	cleanBytes, dirtyBytes int64
	all                    []*segEntry // every segment of the snapshot
}

// planClean lays the log out as Kafka's cleaner does: the clean part below
// the cleaner checkpoint, then the cleanable dirty part, then the
// uncleanable part, which starts at the first segment that is active, not
// yet sealed (rolled past but not fsynced), not wholly below the high
// watermark, or (with MinCompactionLag) holding a record newer than the lag.
func (l *Log) planClean(now time.Time) (*cleanPlan, error) {
	l.appendMu.Lock()
	if l.closing {
		l.appendMu.Unlock()
		return nil, ErrClosed
	}
	if err := l.err(); err != nil {
		l.appendMu.Unlock()
		return nil, err
	}
	sn := l.snap.Load()
	active := l.active
	pending := slices.Clone(l.pending)
	l.appendMu.Unlock()
	hw := l.hw.Load().offset

	pl := &cleanPlan{start: sn.start}
	sn.segs.Ascend(func(e *segEntry) bool {
		pl.all = append(pl.all, e)
		return true
	})
	if len(pl.all) == 0 {
		// A truncation below the first segment is between removing the
		// segments and putting the empty one in: nothing to clean.
		return pl, nil
	}
	pl.firstDirty = max(l.cmp.firstDirty.Load(), pl.all[0].base)
	for i, e := range pl.all {
		if e == active || slices.Contains(pending, e) || i+1 == len(pl.all) || pl.all[i+1].base > hw {
			break
		}
		end := pl.all[i+1].base
		if lag := l.cur().o.MinCompactionLag; lag > 0 && end > pl.firstDirty {
			ts, err := l.segMaxTimestamp(e)
			if err != nil {
				return nil, err
			}
			if ts > now.Add(-lag).UnixMilli() {
				break
			}
		}
		size, err := l.segSize(e)
		if err != nil {
			return nil, err
		}
		pl.segs = append(pl.segs, e)
		pl.ends = append(pl.ends, end)
		pl.sizes = append(pl.sizes, size)
		if end <= pl.firstDirty {
			pl.cleanBytes += size
		} else {
			pl.dirtyBytes += size
		}
	}
	pl.bound = pl.all[len(pl.segs)].base
	return pl, nil
}

// pass is one cleaning pass.
type pass struct {
	l    *Log
	ctx  context.Context
	c    *Cleaner
	pl   *cleanPlan
	now  time.Time
	m    *offsetMap
	end  int64 // the pass cleans the records below end
	res  CompactResult
	bufs int // I/O buffer size

	lastOf    map[int64]int64 // producer id -> base offset of its last data batch
	builders  map[record.Codec]*record.Builder
	buildBuf  []byte
	checked   int // batches since the last abandonment check
	writers   []*cleanedWriter
	groups    []cleanGroup
	installed bool
}

// cleanGroup is a run of adjacent segments that one cleaned segment
// replaces.
type cleanGroup struct {
	from, to int   // segs[from:to] of the plan
	base     int64 // the cleaned segment's base: the first one's
	end      int64 // the base of the segment after the group
	mtime    time.Time
}

// cleanPass runs one pass: it builds the key map over the dirty part,
// recopies the log from its first segment up to where the map reaches,
// grouping small neighbours, and swaps the cleaned segments in. It returns
// nil, nil when nothing is cleanable, and the pass with an error when it
// was installed but the old files could not all be removed. cleanMu must
// be held.
func (l *Log) cleanPass(ctx context.Context, c *Cleaner) (*pass, error) {
	now := l.opts.Now()
	pl, err := l.planClean(now)
	if err != nil {
		return nil, err
	}
	if pl.dirtyBytes == 0 {
		return nil, nil
	}
	p := &pass{l: l, ctx: ctx, c: c, pl: pl, now: now, bufs: c.opts.IOBufferBytes}
	if err := p.run(); err != nil {
		if !p.installed {
			p.removeCleaned()
			return nil, err
		}
		if p.res.Passes == 0 {
			return nil, err // the swap failed half way: the log failed
		}
		return p, err
	}
	return p, nil
}

func (p *pass) run() error {
	err := p.prepare()
	if err == nil {
		return p.swap()
	}
	if errors.Is(err, ErrClosed) || p.ctx.Err() != nil || !p.sourcesChanged() {
		return err
	}
	// A truncation or a deletion under the pass explains the failure (a
	// file gone or cut short): the log is fine, the pass is moot.
	return fmt.Errorf("%w: %w", ErrCompactionAborted, err)
}

// sourcesChanged reports whether a segment the pass planned to read is no
// longer a sealed segment of the log.
func (p *pass) sourcesChanged() bool {
	l := p.l
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	for _, e := range p.pl.segs {
		if got, ok := l.tree.Get(e); !ok || got != e || e == l.active {
			return true
		}
	}
	return false
}

// prepare builds the map and writes the cleaned segments, durably.
func (p *pass) prepare() error {
	if err := p.buildMap(); err != nil {
		return err
	}
	if err := p.l.beforeWrite(); err != nil {
		return err
	}
	p.groupSegments()
	for gi := range p.groups {
		if err := p.writeGroup(gi); err != nil {
			return err
		}
	}
	if err := p.l.fs.SyncDir(p.l.dir); err != nil {
		return fmt.Errorf("log: compaction: sync dir %s: %w", p.l.dir, err)
	}
	return p.check()
}

// check reports whether the pass must be abandoned: its context ended, or
// the log or the cleaner is closing.
func (p *pass) check() error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	select {
	case <-p.l.quit:
		return ErrClosed
	case <-p.c.ctx.Done():
		return fmt.Errorf("%w: the cleaner", ErrClosed)
	default:
		return nil
	}
}

// checkSometimes is check every 64 batches.
func (p *pass) checkSometimes() error {
	p.checked++
	if p.checked&63 != 0 {
		return nil
	}
	return p.check()
}

// dirtyIndex returns the index of the first segment holding dirty records.
func (p *pass) dirtyIndex() int {
	for i, end := range p.pl.ends {
		if end > p.pl.firstDirty {
			return i
		}
	}
	return len(p.pl.segs)
}

// buildMap maps each key of the dirty part to the offset of its latest
// record, in a map as large as the budget allows and the dirty offsets
// need. When the map fills up, the pass cleans only below the batch where
// it filled (Kafka's rule); a map too small for the first dirty batch is
// ErrCleanerMapTooSmall.
func (p *pass) buildMap() error {
	pl := p.pl
	need := float64(pl.bound-pl.firstDirty)/p.c.opts.LoadFactor + 2
	slots := int(min(float64(p.c.mapSlots()), need))
	p.m = newOffsetMap(slots, p.c.opts.LoadFactor)
	p.res.MapSlots = int(p.m.n)
	mapped := pl.firstDirty
	full := false
	for i := p.dirtyIndex(); i < len(pl.segs) && !full; i++ {
		r, err := openBatchReader(p.l.fs, p.l.dir, pl.segs[i].base, p.bufs)
		if err != nil {
			return err
		}
		for {
			b, pos, err := r.next(false)
			if err == io.EOF {
				break
			}
			if err == nil {
				err = p.checkSometimes()
			}
			if err != nil {
				r.close()
				return err
			}
			if b.LastOffset() < pl.firstDirty {
				continue
			}
			if b.IsControl() {
				mapped = b.LastOffset() + 1
				continue
			}
			if !p.m.room(int(b.NumRecords())) {
				full = true
				break
			}
			if err := p.mapBatch(b); err != nil {
				r.close()
				return r.corrupt(pos, err).AtOffset(b.BaseOffset())
			}
			mapped = b.LastOffset() + 1
		}
		r.close()
	}
	p.res.MapEntries = p.m.entries
	p.end = pl.bound
	if full {
		if mapped == pl.firstDirty {
			return fmt.Errorf("%w: %d slots (Cleaner BufferBytes %d over %d workers) cannot hold the batch at %d", ErrCleanerMapTooSmall, p.m.n, p.c.opts.BufferBytes, p.c.opts.Workers, mapped)
		}
		p.end = mapped
	}
	return nil
}

func (p *pass) mapBatch(b record.Batch) error {
	opts := decodeOptionsFor(b)
	opts.SkipCRC = true // the reader validated it
	it := b.Records(opts)
	defer it.Close()
	for it.Next() {
		r := it.Record()
		if r.KeyIsNull() {
			continue
		}
		h := hashKey(r.Key())
		p.m.put(&h, r.Offset())
	}
	return it.Err()
}

// groupSegments splits the segments below the pass's end into runs that
// each become one cleaned segment (Kafka's groupSegmentsBySize): adjacent
// segments whose sizes add up to at most SegmentBytes and whose offsets
// all lie within 2^31-1 of the first one's base, as a segment's relative
// offsets must.
func (p *pass) groupSegments() {
	pl := p.pl
	n := 0
	for n < len(pl.segs) && pl.segs[n].base < p.end {
		n++
	}
	for from := 0; from < n; {
		to := from + 1
		total := pl.sizes[from]
		for to < n && total+pl.sizes[to] <= p.l.cur().o.SegmentBytes && pl.ends[to]-1-pl.segs[from].base <= math.MaxInt32 {
			total += pl.sizes[to]
			to++
		}
		p.groups = append(p.groups, cleanGroup{from: from, to: to, base: pl.segs[from].base, end: pl.ends[to-1]})
		from = to
	}
}

// writeGroup writes the cleaned segment of one group. A record stays
// unless its key has a later record in the map, it is a tombstone whose
// retention ran out, or it has no key. A batch keeps its offsets, producer
// id, epoch and sequences, leader epoch and compression: unchanged if
// nothing in it goes, rebuilt with the same header fields (and its last
// offset delta, so its sequence range too) otherwise. A batch that loses
// every record is kept empty when it is its producer's last data batch in
// the log (so the producer's sequence survives, as in Kafka) or the last
// batch of the group (so the cleaned segment ends where the group did: the
// next segment starts right after it, which recovery relies on to tell a
// cleaned segment from a torn one, and a .swap file's end says which
// segments it replaces). Control batches are kept as they are.
//
// Tombstones: a tombstone in a segment of the clean part (wholly below the
// cleaner checkpoint) whose last cleaning is more than DeleteRetention ago
// is dropped (Kafka's delete horizon); the time of the last cleaning is the
// .log's modification time, which each pass sets on the segments it writes:
// the latest of its clean sources' times, and the pass's time if it took in
// any dirty segment.
func (p *pass) writeGroup(gi int) error {
	g := &p.groups[gi]
	pl := p.pl
	var srcBytes int64
	for _, size := range pl.sizes[g.from:g.to] {
		srcBytes += size
	}
	w, err := createCleaned(p.l.fs, p.l.dir, g.base, p.l.segOpts(), int(min(int64(p.bufs), max(srcBytes, 4096))))
	if err != nil {
		return err
	}
	p.writers = append(p.writers, w)
	for i := g.from; i < g.to; i++ {
		e := pl.segs[i]
		clean := pl.ends[i] <= pl.firstDirty
		dropTombstones := false
		mtime := p.now
		if clean {
			fi, err := p.l.fs.Stat(segment.LogPath(p.l.dir, e.base))
			if err != nil {
				return fmt.Errorf("log: compaction: %w", err)
			}
			mtime = fi.ModTime()
			retention := max(p.l.cur().o.DeleteRetention, 0)
			dropTombstones = !mtime.Add(retention).After(p.now)
		}
		if mtime.After(g.mtime) {
			g.mtime = mtime
		}
		if err := p.copySegment(w, e.base, dropTombstones, i == g.to-1); err != nil {
			return err
		}
		p.res.BytesRead += pl.sizes[i]
		p.res.SegmentsCleaned++
	}
	if w.last+1 != g.end {
		// Sealed segments end where the next begins (rolls start the next
		// segment at the log end, and recovery removes what follows a
		// gap), and the group's last batch always stays.
		return chainGap(p.l.dir, g.base, pl.segs[g.to-1].base, w.last+1, g.end)
	}
	if err := w.finish(g.mtime); err != nil {
		return err
	}
	p.res.BytesWritten += w.pos
	p.res.SegmentsWritten++
	return nil
}

// copySegment copies one source segment's surviving records into w.
// groupLast says it is the group's last segment, whose last batch stays.
func (p *pass) copySegment(w *cleanedWriter, base int64, dropTombstones, groupLast bool) error {
	r, err := openBatchReader(p.l.fs, p.l.dir, base, p.bufs)
	if err != nil {
		return err
	}
	defer r.close()
	for {
		b, pos, err := r.next(false)
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = p.checkSometimes()
		}
		if err != nil {
			return err
		}
		out, err := p.filterBatch(b, dropTombstones, groupLast && !r.more())
		if err != nil {
			return r.batchErr(pos, b.BaseOffset(), err)
		}
		if out != nil {
			if err := w.append(out); err != nil {
				return err
			}
		}
	}
}

// filterBatch returns what stays of b: b itself, a rebuilt batch, or nil.
func (p *pass) filterBatch(b record.Batch, dropTombstones, keepLast bool) (record.Batch, error) {
	if b.IsControl() {
		return b, nil
	}
	bld, err := p.builder(b)
	if err != nil {
		return nil, err
	}
	opts := decodeOptionsFor(b)
	opts.SkipCRC = true
	it := b.Records(opts)
	defer it.Close()
	removed := int64(0)
	for it.Next() {
		r := it.Record()
		keep := false
		if !r.KeyIsNull() {
			h := hashKey(r.Key())
			latest := p.m.get(&h) <= r.Offset()
			keep = latest && !(dropTombstones && r.ValueIsNull())
			if latest && !keep {
				p.res.TombstonesRemoved++
			}
		}
		if !keep {
			removed++
			continue
		}
		if err := bld.AppendAt(int32(r.Offset()-b.BaseOffset()), recordOf(r, b)); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	p.res.RecordsRemoved += removed
	if removed == 0 {
		return b, nil
	}
	if bld.Len() == 0 && !keepLast && !p.producersLast(b) {
		return nil, nil
	}
	if bld.Len() == 0 {
		p.res.EmptyBatches++
	}
	if err := bld.SetLastOffsetDelta(b.LastOffsetDelta()); err != nil {
		return nil, err
	}
	p.buildBuf, err = bld.Build(p.buildBuf)
	if err != nil {
		return nil, err
	}
	return record.Batch(p.buildBuf), nil
}

// recordOf turns a record view into a Record for a builder (which copies
// the bytes). A log-append-time batch's view reports the batch's time; the
// rebuilt batch reports the same, since it keeps that time.
func recordOf(r record.RecordView, b record.Batch) record.Record {
	rec := record.Record{Key: r.Key(), Value: r.Value(), Timestamp: r.Timestamp()}
	if n := r.NumHeaders(); n > 0 {
		rec.Headers = make([]record.Header, 0, n)
		hs := r.Headers()
		for hs.Next() {
			rec.Headers = append(rec.Headers, record.Header{Key: string(hs.Key()), Value: hs.Value()})
		}
	}
	return rec
}

// builder returns a reset builder for b's codec with b's header fields.
func (p *pass) builder(b record.Batch) (*record.Builder, error) {
	if p.builders == nil {
		p.builders = map[record.Codec]*record.Builder{}
	}
	bld := p.builders[b.Codec()]
	if bld == nil {
		var err error
		if bld, err = record.NewBuilder(&record.BuilderOptions{Codec: b.Codec()}); err != nil {
			return nil, err
		}
		p.builders[b.Codec()] = bld
	}
	bld.Reset()
	bld.BaseOffset = b.BaseOffset()
	bld.PartitionLeaderEpoch = b.PartitionLeaderEpoch()
	bld.ProducerID = b.ProducerID()
	bld.ProducerEpoch = b.ProducerEpoch()
	bld.BaseSequence = b.BaseSequence()
	bld.Transactional = b.IsTransactional()
	// An emptied batch keeps b's max timestamp (Kafka's writeEmptyHeader):
	// with NoTimestamp, a cleaned segment of empty batches had max
	// timestamp -1, so it always passed the MinCompactionLag check and time
	// retention never deleted it.
	bld.EmptyTimestamp = b.MaxTimestamp()
	if b.LogAppendTime() {
		bld.LogAppendTime = true
		bld.AppendTime = b.MaxTimestamp()
	}
	return bld, nil
}

// producersLast reports whether b is the last data batch of its producer in
// the whole log. The first call walks the batch headers of every segment,
// the active one included, up to what is written.
func (p *pass) producersLast(b record.Batch) bool {
	if b.ProducerID() < 0 {
		return false
	}
	if p.lastOf == nil {
		p.lastOf = map[int64]int64{}
		for i, e := range p.pl.all {
			r, err := openBatchReader(p.l.fs, p.l.dir, e.base, p.bufs)
			if err != nil {
				// A segment that went away since the plan: the swap will
				// find the log changed and abandon the pass.
				continue
			}
			r.tolerant = i >= len(p.pl.segs)
			for {
				h, _, err := r.next(true)
				if err != nil {
					break
				}
				if !h.IsControl() && h.ProducerID() >= 0 {
					p.lastOf[h.ProducerID()] = h.BaseOffset()
				}
			}
			r.close()
		}
	}
	last, ok := p.lastOf[b.ProducerID()]
	return !ok || last <= b.BaseOffset()
}

// removeCleaned removes the files of an abandoned pass.
func (p *pass) removeCleaned() {
	for _, w := range p.writers {
		w.abort()
	}
	for _, g := range p.groups {
		for _, suf := range segSuffixes {
			for _, name := range []string{cleanedName(g.base, suf), segment.FileName(g.base, suf+swapSuffix)} {
				_ = p.l.fs.Remove(filepath.Join(p.l.dir, name))
			}
		}
	}
	_ = p.removeSwapCommit()
}

// swap replaces the groups' segments with the cleaned ones by Kafka's
// crash-safe sequence (LocalLog.replaceSegments). Each step is a method
// below whose documentation says what the directory holds before and after
// it, and how Open (cleanup in open.go) resolves a crash between two steps;
// every renaming step ends with a directory fsync, so a crash between
// steps leaves exactly the state its documentation names:
//
//  1. checkSources, writeSwapCommit, pinSources: the replaced segments are
//     checked to be unchanged; the swap-commit marker (SwapCommitFile: each
//     cleaned .log's size, CRC-32C and the range it replaces) is written
//     durably, since without it Open trusts no .swap file; the replaced
//     segments are loaded, so that readers of the last snapshot can go on
//     reading them from their open files after the names are gone;
//  2. stageSwaps: every .cleaned file becomes .swap;
//  3. retireSources: the replaced segments' files become .deleted;
//  4. promoteSwaps: the .swap files take their live names;
//  5. installCleaned: the new segments replace the old ones for readers;
//  6. removeSources: the old segments are closed and their .deleted files
//     removed, then the marker.
//
// A crash before step 2 is durable leaves the log as before the pass; one
// after, as after it: each .log.swap the marker vouches for takes the place
// of the segments in the range the marker gives. A .log.swap the marker
// does not vouch for is never trusted: it is discarded and the live
// segments kept. retentionMu keeps TruncateTo, retention and Close out
// while it runs. A failure once step 2 has begun leaves the directory half
// swapped: the log fails (ErrFailed) and the next Open finishes the swap or
// undoes it.
func (p *pass) swap() error {
	l := p.l
	l.retentionMu.Lock()
	defer l.retentionMu.Unlock()

	srcs := p.sources()
	if err := p.checkSources(srcs); err != nil {
		return err
	}
	if err := p.writeSwapCommit(); err != nil {
		return err // nothing renamed yet: the pass is abandoned
	}
	if err := p.pinSources(srcs); err != nil {
		return err
	}
	if err := p.afterStep(swapPinned); err != nil {
		p.installed = true // a dead process removes nothing
		return err
	}
	renames := []struct {
		step swapStep
		run  func([]*segEntry) error
	}{
		{swapStaged, p.stageSwaps},
		{swapRetired, p.retireSources},
		{swapPromoted, p.promoteSwaps},
	}
	for _, s := range renames {
		err := s.run(srcs)
		p.installed = true // from the first rename on, the files are no longer the pass's to remove
		if err == nil {
			err = p.afterStep(s.step)
		}
		if err != nil {
			return l.fail(err)
		}
	}
	if err := l.installCleaned(p, srcs); err != nil {
		return err
	}
	if err := p.afterStep(swapInstalled); err != nil {
		return err
	}
	return p.removeSources(srcs)
}

// swapStep names the boundaries between the steps of swap, for tests that
// crash there (Options.afterSwapStep).
type swapStep int

const (
	swapPinned    swapStep = iota // sources checked and pinned; nothing renamed
	swapStaged                    // after stageSwaps
	swapRetired                   // after retireSources
	swapPromoted                  // after promoteSwaps
	swapInstalled                 // after installCleaned, before removeSources
)

func (s swapStep) String() string {
	switch s {
	case swapPinned:
		return "pinned"
	case swapStaged:
		return "staged"
	case swapRetired:
		return "retired"
	case swapPromoted:
		return "promoted"
	case swapInstalled:
		return "installed"
	}
	return fmt.Sprintf("swapStep(%d)", int(s))
}

// afterStep calls the test hook, if any, at a step boundary of swap; an
// error it returns stops the swap there, as a crash would.
func (p *pass) afterStep(s swapStep) error {
	if h := p.l.opts.afterSwapStep; h != nil {
		return h(s)
	}
	return nil
}

// sources returns the segments the groups replace, in offset order.
func (p *pass) sources() []*segEntry {
	var srcs []*segEntry
	for _, g := range p.groups {
		srcs = append(srcs, p.pl.segs[g.from:g.to]...)
	}
	return srcs
}

// checkSources returns ErrCompactionAborted if a replaced segment is no
// longer a sealed segment of the log (truncated, deleted, or not yet
// sealed), and the log's error if it failed. The directory holds the live
// segments and the durable .cleaned files before and after; a crash here
// leaves the log as before the pass (Open removes .cleaned files).
// retentionMu must be held.
func (p *pass) checkSources(srcs []*segEntry) error {
	l := p.l
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.appendErrLocked(); err != nil {
		return err
	}
	for _, e := range srcs {
		if got, ok := l.tree.Get(e); !ok || got != e || e == l.active || slices.Contains(l.pending, e) {
			return ErrCompactionAborted
		}
	}
	return nil
}

// pinSources takes the replaced segments out of the caps (no idle close)
// and loads them, so that readers of the current snapshot can read them
// from their open files once their names are gone. On error they are put
// back. The directory is unchanged.
func (p *pass) pinSources(srcs []*segEntry) error {
	l := p.l
	for i, e := range srcs {
		l.caps.forget(&e.capEntry)
		if _, err := e.seg.NextOffset(); err != nil {
			for _, d := range srcs[:i+1] {
				l.caps.add(&d.capEntry)
			}
			return markCorrupt(fmt.Errorf("log: compaction: load: %w", err)) // err names the segment
		}
	}
	return nil
}

// stageSwaps renames every cleaned file from .cleaned to .swap, groups in
// descending offset order, each group's .log last, and fsyncs the
// directory.
//
// Before: the live segments and the durable .cleaned files. A crash part
// way leaves .swap files above the lowest .cleaned offset (the descending
// order guarantees it), which Open removes with the .cleaned ones: the log
// is as before the pass. After: the .swap files, durable; from here Open
// completes the swap (each .log.swap replaces the segments its offsets
// cover), so the log is as after the pass.
func (p *pass) stageSwaps([]*segEntry) error {
	for gi := len(p.groups) - 1; gi >= 0; gi-- {
		base := p.groups[gi].base
		for _, suf := range segSuffixes {
			if err := p.rename(cleanedName(base, suf), segment.FileName(base, suf+swapSuffix)); err != nil {
				return err
			}
		}
	}
	return p.syncDir()
}

// retireSources renames the replaced segments' files to .deleted, highest
// offset first, and fsyncs the directory.
//
// Before: the live replaced segments beside the durable .swap files. After:
// their .deleted files beside the .swap files. At any point between, Open
// removes the .deleted files and gives the .swap files their live names,
// removing the replaced segments still live: the log is as after the pass.
func (p *pass) retireSources(srcs []*segEntry) error {
	for i := len(srcs) - 1; i >= 0; i-- {
		for _, suf := range segSuffixes {
			name := segment.FileName(srcs[i].base, suf)
			if err := p.rename(name, name+segment.DeletedSuffix); err != nil {
				return err
			}
		}
	}
	return p.syncDir()
}

// promoteSwaps renames the .swap files to their live names, groups in
// descending offset order, and fsyncs the directory.
//
// Before: the replaced segments' .deleted files and the .swap files. After:
// the cleaned segments under their live names beside the .deleted files,
// which Open removes. At any point between, the log opens as after the
// pass.
func (p *pass) promoteSwaps([]*segEntry) error {
	for gi := len(p.groups) - 1; gi >= 0; gi-- {
		base := p.groups[gi].base
		for _, suf := range segSuffixes {
			if err := p.rename(segment.FileName(base, suf+swapSuffix), segment.FileName(base, suf)); err != nil {
				return err
			}
		}
	}
	return p.syncDir()
}

// removeSources closes the replaced segments and removes their .deleted
// files, then fsyncs the directory. Readers of older snapshots that have
// not reached them yet get ErrClosed and retry on the new snapshot; views
// already handed out keep their files.
//
// Before: the cleaned segments live, installed for readers, and the
// .deleted files. After: the cleaned segments only. The swap is done
// either way; a crash or an error leaves .deleted files that Open removes.
func (p *pass) removeSources(srcs []*segEntry) error {
	l := p.l
	var errs []error
	for _, e := range srcs {
		if err := e.seg.Close(); err != nil {
			errs = append(errs, err)
		}
		for _, suf := range segSuffixes {
			name := segment.FileName(e.base, suf) + segment.DeletedSuffix
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := p.syncDir(); err != nil {
		errs = append(errs, err)
	} else if err := p.removeSwapCommit(); err != nil {
		// The marker goes once the .deleted files are gone for good: Open
		// tells them from damaged segments by its ranges.
		errs = append(errs, err)
	} else if err := p.syncDir(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("log: compaction: remove replaced segments: %w", errors.Join(errs...))
	}
	return nil
}

// rename renames a file of the log's directory; a file that is not there
// (an index never written) is no error.
func (p *pass) rename(from, to string) error {
	l := p.l
	err := l.fs.Rename(filepath.Join(l.dir, from), filepath.Join(l.dir, to))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: compaction: rename %s to %s: %w", from, to, err)
	}
	return nil
}

func (p *pass) syncDir() error {
	l := p.l
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: compaction: sync dir %s: %w", l.dir, err)
	}
	return nil
}

// installCleaned puts the cleaned segments in the tree in place of srcs, publishes
// the snapshot, moves the marks that pointed into replaced segments, and
// advances the cleaner checkpoint.
func (l *Log) installCleaned(p *pass, srcs []*segEntry) error {
	entries := make([]*segEntry, len(p.groups))
	for gi, g := range p.groups {
		seg, err := segment.Open(l.fs, l.dir, g.base, l.segOpts())
		if err != nil {
			return l.fail(fmt.Errorf("log: compaction: open cleaned segment %d: %w", g.base, err))
		}
		entries[gi] = l.newEntry(seg)
	}
	replaced := map[int64]bool{}
	l.appendMu.Lock()
	for _, e := range srcs {
		l.tree.Delete(e)
		replaced[e.base] = true
	}
	for _, e := range entries {
		l.tree.ReplaceOrInsert(e)
	}
	l.publishLocked(l.snap.Load().start)
	sn := l.snap.Load()
	for _, m := range []*mark{&l.durMark, &l.extHW} {
		if !replaced[m.segBase] {
			continue
		}
		// A mark lies in or at the end of its segment, and the pass cleaned
		// only below the high watermark and the durable end, so this mark
		// is at the end of the cleaned part: find it anew.
		nm, err := l.markFor(sn, m.offset)
		if err != nil {
			// Readers then see less, never more, until the next flush.
			nm = mark{offset: p.groups[0].base, segBase: p.groups[0].base}
		}
		*m = nm
	}
	l.durable.Store(l.durMark.offset)
	l.publishHWLocked()
	l.cmp.firstDirty.Store(p.end)
	l.appendMu.Unlock()
	for _, e := range entries {
		l.caps.setEligible(&e.capEntry)
	}
	p.res.Passes = 1
	p.res.FirstDirtyOffset = l.cmp.firstDirty.Load()
	return nil
}
