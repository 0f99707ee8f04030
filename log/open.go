package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/index"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// Suffixes of the files a crash can leave behind, after Kafka's rules.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// Open opens (creating if needed) the log in dir. st is what the owner
// checkpointed from the log's last life (Checkpoint), or the zero State for
// a new log; fsys nil means vfs.Default.
//
// After a clean shutdown (st.Clean) Open costs O(1) per segment: a sealed
// segment is not loaded, scanned or mapped until first used (Open reads
// only where it ends, to check the chain of offsets, see checkChain), and
// only the last one is loaded to append to. A log end below the end the
// clean shutdown checkpointed stays there (see keepEnd). After an unclean one, the segments from
// the one holding st.RecoveryPoint onwards are scanned batch by batch and
// each is cut at its first bad batch; a cut in a segment with segments
// after it keeps them (the hole is filled and reported, see holes.go). A hole in the chain of offsets between
// segments, a stray segment past the end, and a segment renamed .deleted
// inside the log are damage: Open repairs what it finds (see holes.go) and
// reports it in RecoveryReport.Damage. Before
// that, files a crash left behind are resolved by Kafka's rules: .deleted
// and .cleaned files are removed, a complete .swap replaces the segments it
// covers, and index files without a .log are removed. Recovery reports what
// it did.
func Open(fsys vfs.FS, dir string, opts *Options, st State) (*Log, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if fsys == nil {
		fsys = vfs.Default
	}
	if o.ReadOnly {
		return openReadOnly(fsys, dir, o, st)
	}
	caps := o.Caps
	if caps == nil {
		caps = NewResourceCaps(0)
	}
	l := &Log{
		fs:        fsys,
		dir:       filepath.Clean(dir),
		opts:      o,
		caps:      caps,
		tree:      btree.NewG[*segEntry](16, lessEntry),
		hwWake:    newNotifier(),
		endWake:   newNotifier(),
		quit:      make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1),
		flushDone: make(chan struct{}),
	}
	l.live.Store(newLiveOptions(o))
	l.idle.L = &l.appendMu
	l.hwWake.level = l.waitLevel
	l.endWake.level = l.endWaitLevel
	l.idxFloor.Store(-1)
	if err := l.load(st); err != nil {
		l.abandon()
		return nil, markCorrupt(err)
	}
	l.loadEpochs(st)
	if err := l.initCompaction(st); err != nil {
		l.abandon()
		return nil, err
	}
	if len(l.idxUnsynced) > 0 {
		if o.noBackground {
			_ = l.syncRecoveredIndexes() // on an error the cap stays; Close tries again
		} else {
			l.goFunc(func() { _ = l.syncRecoveredIndexes() })
		}
	}
	if !o.noBackground {
		l.goFunc(l.background)
	}
	return l, nil
}

// abandon closes whatever a failed Open had opened.
func (l *Log) abandon() {
	l.tree.Ascend(func(e *segEntry) bool {
		l.caps.forget(&e.capEntry)
		_ = e.seg.Close()
		return true
	})
}

// dirListing is what Open found in the directory.
type dirListing struct {
	logs     map[int64]bool
	indexes  map[int64][]string // index and time-index file names by base
	swaps    []int64            // bases of .log.swap files
	deleted  map[int64]bool     // bases of .log.deleted files
	junk     []string           // names to remove
	minClean int64              // smallest base of a .cleaned file
	marker   bool               // a swap-commit marker is there
	missing  []int64            // bases inside the chain whose .log is gone (their indexes are left)
}

func (l *Log) list() (*dirListing, error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("log: list %s: %w", l.dir, err)
	}
	d := &dirListing{logs: map[int64]bool{}, indexes: map[int64][]string{}, deleted: map[int64]bool{}, minClean: math.MaxInt64}
	for _, de := range ents {
		name := de.Name()
		switch name {
		case SwapCommitFile:
			d.marker = true
			continue
		case SwapCommitFile + ".tmp":
			d.junk = append(d.junk, name)
			continue
		}
		base, suffix, ok := segment.ParseFileName(name)
		if !ok || de.IsDir() {
			continue // not ours: leave it alone
		}
		switch {
		case strings.HasSuffix(suffix, segment.DeletedSuffix):
			d.junk = append(d.junk, name)
			if suffix == segment.LogSuffix+segment.DeletedSuffix {
				d.deleted[base] = true
			}
		case strings.HasSuffix(suffix, cleanedSuffix):
			d.junk = append(d.junk, name)
			d.minClean = min(d.minClean, base)
		case suffix == segment.LogSuffix+segment.TruncateSuffix:
			d.junk = append(d.junk, name)
		case suffix == segment.LogSuffix+swapSuffix:
			d.swaps = append(d.swaps, base)
		case strings.HasSuffix(suffix, swapSuffix):
			// An index swap: the index is rebuilt from the log anyway.
			d.junk = append(d.junk, name)
		case suffix == segment.LogSuffix:
			d.logs[base] = true
		case suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix:
			d.indexes[base] = append(d.indexes[base], name)
		}
	}
	return d, nil
}

// load builds the log from the directory: cleanup, then the segments, then
// recovery or a lazy clean open.
func (l *Log) load(st State) error {
	if _, err := l.fs.Stat(l.dir); errors.Is(err, fs.ErrNotExist) {
		if err := l.beforeWrite(); err != nil {
			return err
		}
		if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
			return fmt.Errorf("log: create %s: %w", l.dir, err)
		}
		if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
			return fmt.Errorf("log: sync dir %s: %w", filepath.Dir(l.dir), err)
		}
	} else if err != nil {
		return fmt.Errorf("log: stat %s: %w", l.dir, err)
	}
	d, err := l.list()
	if err != nil {
		return err
	}
	if err := l.cleanup(d, st); err != nil {
		return err
	}
	bases := make([]int64, 0, len(d.logs))
	for b := range d.logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	entries := make([]*segEntry, 0, len(bases)+1)
	for _, b := range bases {
		seg, err := segment.Open(l.fs, l.dir, b, l.segOpts())
		if err != nil {
			return fmt.Errorf("log: open segment %d in %s: %w", b, l.dir, err)
		}
		e := l.newEntry(seg)
		entries = append(entries, e)
		l.tree.ReplaceOrInsert(e)
	}

	l.recovery.Clean = st.Clean
	if len(entries) == 0 {
		return l.startEmpty(max(st.LogStartOffset, 0), st)
	}
	recovered := map[*segEntry]bool{}
	if st.Clean {
		if entries, err = l.checkTail(entries, st.RecoveryPoint); err != nil {
			return err
		}
		if entries, err = l.checkChain(entries); err != nil {
			return err
		}
	} else {
		// The segments below the recovery point are not scanned, not
		// even opened (they were durable when it passed them), but one
		// of them may have been emptied since (one deleted leaves its
		// indexes: d.missing): a stat shows an empty .log, and then
		// their chain is checked as a clean open checks it, up to the
		// first segment recover scans.
		below, emptied := 0, false
		for i, e := range entries {
			if e.base <= st.RecoveryPoint {
				below = i + 1
			}
		}
		for _, e := range entries[:max(below-1, 0)] {
			if fi, err := l.fs.Stat(segment.LogPath(l.dir, e.base)); err == nil && fi.Size() == 0 {
				emptied = true
				break
			}
		}
		if below >= 2 && emptied {
			if _, err = l.checkChain(entries[:below]); err != nil {
				return err
			}
			entries = l.entries()
		}
		if recovered, err = l.recover(entries, max(st.RecoveryPoint, 0)); err != nil {
			return err
		}
		entries = entries[:0]
		l.tree.Ascend(func(e *segEntry) bool {
			entries = append(entries, e)
			return true
		})
	}
	if len(d.missing) > 0 {
		if entries, err = l.checkMissing(d.missing); err != nil {
			return err
		}
	}
	last := entries[len(entries)-1]
	cleanEnd := int64(-1)
	if st.Clean && st.RecoveryPoint > 0 {
		cleanEnd = st.RecoveryPoint
	}
	if err := l.loadLast(last, recovered, cleanEnd); err != nil {
		return err
	}
	next, err := last.seg.NextOffset()
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	size, err := last.seg.Size()
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if st.Clean && st.RecoveryPoint > 0 && next > st.RecoveryPoint && last.base < st.RecoveryPoint {
		// A clean shutdown checkpointed the log end itself, so batches
		// claiming offsets past it were damaged after it (a base offset,
		// which the CRC does not cover): they are cut, and keepEnd below
		// fills their range up to that end.
		if err := l.beforeWrite(); err != nil {
			return err
		}
		cut, err := last.seg.TruncateTo(st.RecoveryPoint)
		if err != nil {
			return fmt.Errorf("log: cut the batches past the checkpointed end: %w", err)
		}
		l.recovery.BytesCut += cut
		l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, last.base), -1,
			"the last segment ends at offset %d, past the end %d its clean shutdown checkpointed: a damaged base offset; the %d bytes of batches holding offsets from %d on are cut",
			next, st.RecoveryPoint, cut, st.RecoveryPoint).AtOffset(st.RecoveryPoint))
		if next, err = last.seg.NextOffset(); err != nil {
			return fmt.Errorf("log: %w", err)
		}
		if size, err = last.seg.Size(); err != nil {
			return fmt.Errorf("log: %w", err)
		}
	}
	if st.Clean && entries[0].base > st.LogStartOffset && st.RecoveryPoint > st.LogStartOffset {
		// A clean shutdown checkpointed the start: the segments before
		// the first one were lost to damage after it.
		l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, entries[0].base), -1,
			"the log starts at offset %d, above the start %d its clean shutdown checkpointed: offsets %d to %d are lost; the log starts at %d now",
			entries[0].base, st.LogStartOffset, st.LogStartOffset, entries[0].base-1, entries[0].base).AtOffset(st.LogStartOffset))
	}
	if st.RecoveryPoint > next && st.RecoveryPoint > max(st.LogStartOffset, entries[0].base) {
		// Everything below the recovery point was fsynced: what is
		// missing of it was lost to damage after the fact.
		if !st.Clean {
			l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, last.base), -1,
				"the log ends at offset %d, below its checkpointed recovery point %d: offsets %d to %d are lost; the next append gets %d", next, st.RecoveryPoint, next, st.RecoveryPoint-1, next).AtOffset(next))
		} else {
			// A clean shutdown checkpointed the log end itself: those
			// offsets were acknowledged, and consumers and groups may
			// hold them, so the log end stays there (see holes.go).
			if last, err = l.keepEnd(last, next, st.RecoveryPoint); err != nil {
				return err
			}
			next, size = st.RecoveryPoint, 0
			entries = l.entries()
		}
	}
	start := max(st.LogStartOffset, entries[0].base)
	if start > next {
		// The checkpointed start lies beyond what survived (a power cut
		// took records that DeleteRecordsBefore had already passed):
		// nothing below it may be served, so start over there.
		return l.startOverAt(start, st)
	}
	for _, e := range entries[:len(entries)-1] {
		// Sealed segments join the caps unloaded (Recover leaves the ones
		// it scanned unloaded too): they count once first read.
		l.caps.setEligible(&e.capEntry)
	}
	l.install(last, next, size, start, st)
	return nil
}

// cleanup resolves what a crash left behind, by Kafka's rules (LogLoader)
// made strict about swaps: .deleted and .cleaned files go; a .log.swap at
// or above the smallest .cleaned offset belongs to a swap whose first step
// did not finish and goes too; a .log.swap that the swap-commit marker
// vouches for (see checkSwap) is complete, so the segments it covers go and
// it takes its live name; any other .log.swap (no marker, a damaged one, a
// size, checksum or offset range that does not match) is discarded and
// reported in RecoveryReport.Damage, the live segments kept, and replaced
// segments of its range that were already renamed .deleted are brought
// back. Index files without a .log go. The marker goes last, once the
// renames are durable.
func (l *Log) cleanup(d *dirListing, st State) error {
	checks, markerErr, err := classifySwaps(l.fs, l.dir, d.swaps, d.minClean)
	if err != nil {
		return err
	}
	if markerErr != nil {
		l.recovery.Damage = append(l.recovery.Damage, markerErr)
	}
	var renames [][2]string
	restore := func(from, to int64) {
		for x := range d.deleted {
			if x >= from && x < to && !d.logs[x] {
				name := segment.FileName(x, segment.LogSuffix)
				d.junk = slices.DeleteFunc(d.junk, func(n string) bool { return n == name+segment.DeletedSuffix })
				renames = append(renames, [2]string{name + segment.DeletedSuffix, name})
				d.logs[x] = true
			}
		}
	}
	var discarded [][2]int64 // ranges of damaged swaps, to restore from
	for _, sc := range checks {
		b := sc.Base
		name := segment.FileName(b, segment.LogSuffix+swapSuffix)
		if !sc.Complete {
			d.junk = append(d.junk, name)
			if sc.Err != nil {
				l.recovery.Damage = append(l.recovery.Damage, fmt.Errorf("%w (discarded, the live segments kept)", sc.Err))
				end := sc.End
				if end <= b {
					end = math.MaxInt64
					for lb := range d.logs {
						if lb > b && lb < end {
							end = lb
						}
					}
				}
				discarded = append(discarded, [2]int64{b, end})
			}
			continue
		}
		for lb := range d.logs {
			if lb >= b && lb < sc.End {
				d.junk = append(d.junk, segment.FileName(lb, segment.LogSuffix))
				delete(d.logs, lb)
				d.junk = append(d.junk, d.indexes[lb]...)
				delete(d.indexes, lb)
			}
		}
		// The swap's own indexes were dropped above; any live ones at its
		// base described the replaced segment.
		d.junk = append(d.junk, d.indexes[b]...)
		delete(d.indexes, b)
		renames = append(renames, [2]string{name, segment.FileName(b, segment.LogSuffix)})
		d.logs[b] = true
	}
	for _, r := range discarded {
		restore(r[0], r[1])
	}
	if err := l.restoreRenamed(d, st, restore); err != nil {
		return err
	}
	first, last := int64(math.MaxInt64), int64(-1)
	for b := range d.logs {
		first, last = min(first, b), max(last, b)
	}
	for b, names := range d.indexes {
		if !d.logs[b] {
			d.junk = append(d.junk, names...)
			if b > first && b < last {
				// A .log gone from inside the chain: load checks there.
				d.missing = append(d.missing, b)
			}
		}
	}
	if len(d.junk) == 0 && len(renames) == 0 && !d.marker {
		return nil
	}
	if err := l.beforeWrite(); err != nil {
		return err
	}
	slices.Sort(d.junk)
	d.junk = slices.Compact(d.junk)
	for _, name := range d.junk {
		if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log: remove leftover %s: %w", filepath.Join(l.dir, name), err)
		}
		l.recovery.FilesRemoved = append(l.recovery.FilesRemoved, name)
	}
	if len(d.junk) > 0 && len(renames) > 0 {
		// The replaced segments must be gone durably before a cleaned one
		// takes its live name: a directory may persist its changes in any
		// order until synced, and a rename that persisted alone would
		// leave the replaced segments inside the cleaned one's range with
		// no .log.swap left for the marker to vouch for.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
		}
	}
	for _, r := range renames {
		if err := l.fs.Rename(filepath.Join(l.dir, r[0]), filepath.Join(l.dir, r[1])); err != nil {
			return fmt.Errorf("log: complete swap %s: %w", filepath.Join(l.dir, r[0]), err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
	}
	if !d.marker {
		return nil
	}
	// Every swap it vouched for has its live name now, durably.
	if err := l.fs.Remove(filepath.Join(l.dir, SwapCommitFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: remove %s: %w", filepath.Join(l.dir, SwapCommitFile), err)
	}
	l.recovery.FilesRemoved = append(l.recovery.FilesRemoved, SwapCommitFile)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
	}
	return nil
}

// restoreRenamed brings back a .log.deleted file that lies inside the live
// chain of segments (above the first, below the last) and inside no range
// a swap-commit marker names: no operation of the log leaves one there
// (retention deletes the oldest segments first, truncation the newest
// first, and a compaction's replaced segments lie in its marker's ranges),
// so it is a live segment renamed by damage, and removing it would cost its
// records. With a damaged marker nothing is brought back (the ranges are
// unknown, and a replaced segment brought back would overlap its cleaned
// one); the damage is reported either way. After a clean shutdown, one
// past the last live segment and below the end the shutdown checkpointed
// is brought back too: truncation, the only operation that renames the
// newest segments, had finished before that checkpoint.
func (l *Log) restoreRenamed(d *dirListing, st State, restore func(from, to int64)) error {
	if len(d.deleted) == 0 || len(d.logs) == 0 || (len(d.logs) < 2 && !st.Clean) {
		return nil
	}
	first, last := int64(math.MaxInt64), int64(-1)
	for b := range d.logs {
		first, last = min(first, b), max(last, b)
	}
	var cs map[int64]swapCommit
	if d.marker {
		var err error
		if cs, err = readSwapCommits(l.fs, l.dir); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			return nil // reported with the swaps
		}
	}
	var xs []int64
	for x := range d.deleted {
		if d.logs[x] || x <= first || (x >= last && !(st.Clean && x > last && x < st.RecoveryPoint)) {
			continue
		}
		replaced := false
		for _, c := range cs {
			replaced = replaced || (x >= c.base && x < c.end)
		}
		if !replaced {
			xs = append(xs, x)
		}
	}
	slices.Sort(xs)
	for _, x := range xs {
		restore(x, x+1)
		l.recovery.Damage = append(l.recovery.Damage, errs.Corruptf(ErrCorrupt, segment.LogPath(l.dir, x)+segment.DeletedSuffix, -1,
			"a segment inside the log renamed %s (no deletion leaves one there): renamed back", segment.DeletedSuffix))
	}
	return nil
}

// recoverWorkers bounds how many segments of one log recover at once. A
// segment's scan is CPU-bound (CRC) while its fsyncs wait on the disk, and
// concurrent fsyncs share the file system's journal commits, so a few at a
// time recover much faster than one after another.
const recoverWorkers = 8

// recover scans the segments from the one holding rp to the end (Kafka's
// unflushed segments), cutting torn or corrupt tails. Unlike Kafka, a cut
// in a segment with segments after it removes none of them (a log that
// acknowledges after an fsync sealed the earlier segments first, so they
// may hold acknowledged records): it is reported, and the hole it leaves
// is filled like any hole between scanned segments (an empty or all-bad
// segment after a hole is removed, one overlapping the previous one set
// aside). The
// segments are recovered concurrently and judged in order afterwards: work
// done on a segment that then turns out to follow a cut is thrown away with
// it. It returns the entries it kept (they are unloaded and fsynced).
func (l *Log) recover(entries []*segEntry, rp int64) (map[*segEntry]bool, error) {
	first := 0
	for i, e := range entries {
		if e.base <= rp {
			first = i
		}
	}
	if err := l.beforeWrite(); err != nil {
		return nil, err
	}
	scan := entries[first:]
	results := make([]segment.RecoverResult, len(scan))
	scanErrs := make([]error, len(scan))
	fills := make([][]filledRange, len(scan))
	var salvage *salvaged // what followed damage in the last segment, saved before its cut
	sem := make(chan struct{}, recoverWorkers)
	var wg sync.WaitGroup
	for i, e := range scan {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// One fsync per segment here (its .log); the indexes it
			// finds right are fsynced after Open (syncRecoveredIndexes),
			// before the checkpointed recovery point passes them.
			if i < len(scan)-1 {
				// A sealed segment: damage after which the chain of
				// valid batches resumes is passed over (an empty batch
				// in its place, as a read's repair does), and a damaged
				// tail is filled up to the next segment, so that the
				// valid batches after damage stay. The walk runs only
				// where the recovery's scan met damage, so a valid
				// segment is read once; or where the scan's end reaches
				// the next segment's base, which only the walk knows:
				// a last batch whose base offset (outside the CRC) moved
				// it there is damage the scan cannot see (outOfPlace).
				rewrite := func(r io.ReaderAt, size int64, w io.Writer) (bool, error) {
					return l.passOverDamage(e.base, scan[i+1].base, -1, r, size, w, &fills[i])
				}
				results[i], scanErrs[i] = e.seg.RecoverRewriteDamaged(rewrite, true)
				if scanErrs[i] == nil && results[i].LastOffset >= scan[i+1].base {
					results[i], scanErrs[i] = e.seg.RecoverRewrite(rewrite, true)
				}
				return
			}
			// The last segment: a torn write is cut, but valid batches
			// after damage are saved first (see salvageTail).
			results[i], scanErrs[i] = e.seg.RecoverSalvage(func(r io.ReaderAt, size, pos int64) error {
				var err error
				salvage, err = l.salvageTail(e.base, r, size, pos)
				return err
			})
		}()
	}
	wg.Wait()

	kept := map[*segEntry]bool{}
	var prevNext int64 = -1
	prevTs := int64(index.NoTimestamp)
	var lastKept *segEntry
	for i, e := range scan {
		if scanErrs[i] != nil {
			return nil, fmt.Errorf("log: recover %s: %w", e.seg, scanErrs[i])
		}
		res := results[i]
		if prevNext >= 0 && e.base != prevNext {
			switch {
			case res.LastOffset < e.base:
				if err := l.removeStray(e, prevNext); err != nil {
					return nil, err
				}
				continue
			case e.base < prevNext:
				// Offsets the segment before holds already: this one is
				// no part of the chain (a stray file inside the log).
				if err := l.setAside(e, fmt.Sprintf("base offset %d lies inside the previous segment, which ends at %d", e.base, prevNext)); err != nil {
					return nil, err
				}
				continue
			default:
				l.holeDamage(prevNext, e.base, e.base)
				if prev := lastKept; prev != nil && prev.base == prevNext {
					// An empty segment before the hole (an emptied
					// file): the filler takes its place.
					delete(kept, prev)
					lastKept = nil
					l.tree.Delete(prev)
					if err := prev.seg.Delete(); err != nil {
						return nil, fmt.Errorf("log: remove empty %s: %w", prev.seg, err)
					}
				}
				if err := l.fillHole(prevNext, e.base, prevTs); err != nil {
					return nil, err
				}
			}
		}
		if res.BytesCut > 0 && res.LastOffset < e.base && i < len(scan)-1 {
			// Not one valid batch, and segments after it: no torn write
			// of this log (those hit the segments written last), but a
			// stray or garbage file. It goes alone.
			l.recovery.SegmentsScanned++
			l.recovery.BytesScanned += res.BytesCut
			if err := l.removeEmpty(e, fmt.Sprintf("not one valid batch in a segment with segments after it (%v)", res.Cause)); err != nil {
				return nil, err
			}
			continue
		}
		kept[e] = true
		lastKept = e
		for _, f := range fills[i] {
			l.recovery.Damage = append(l.recovery.Damage, fmt.Errorf("%w (filled with an empty batch; the valid batches after it kept)", f.d))
		}
		if len(fills[i]) > 0 {
			e.filled.Store(&fills[i])
		}
		if len(res.UnsyncedIndexes) > 0 {
			if l.idxFloor.Load() < 0 {
				l.idxFloor.Store(e.base)
			}
			l.idxUnsynced = append(l.idxUnsynced, res.UnsyncedIndexes...)
		}
		l.recovery.SegmentsScanned++
		l.recovery.BytesScanned += res.ValidBytes + res.BytesCut
		l.recovery.BytesCut += res.BytesCut
		prevNext = res.LastOffset + 1
		prevTs = max(prevTs, res.MaxTimestamp)
		if res.BytesCut > 0 && i < len(scan)-1 {
			// Damage in a segment with segments after it: the cut costs
			// the rest of this segment; the segments after it stay (the
			// hole before the next is filled below).
			l.recovery.Damage = append(l.recovery.Damage, fmt.Errorf("%w (cut there: %d bytes, offsets from %d lost up to the next segment)", res.Cause, res.BytesCut, prevNext))
		}
	}
	if salvage != nil {
		if err := l.adoptSalvaged(salvage, scan[len(scan)-1], kept[scan[len(scan)-1]], prevNext, prevTs); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// removeFrom deletes the given segments at open.
func (l *Log) removeFrom(rest []*segEntry) error {
	for _, e := range rest {
		l.tree.Delete(e)
		if err := e.seg.Delete(); err != nil {
			return fmt.Errorf("log: remove %s after a cut: %w", e.seg, err)
		}
		l.recovery.SegmentsRemoved++
	}
	return nil
}

// loadLast loads the last segment, read-only, to learn the log end. It is
// made appendable (Activate) by the first write, after BeforeFirstWrite, so
// that a clean open followed by reads alone changes nothing on disk. A clean
// open trusts the segment; if it is nonetheless found corrupt, it is
// recovered rather than refused. end is the log end a clean shutdown
// checkpointed (-1 when there is none): a batch claiming offsets from it
// on is damage there (its base offset, outside the CRC, was flipped), so
// the recovery passes over that batch alone and keeps the valid batches
// after it, where taking it as valid made every later batch look out of
// order and cost them all.
func (l *Log) loadLast(last *segEntry, recovered map[*segEntry]bool, end int64) error {
	_, err := last.seg.NextOffset()
	if err == nil {
		return nil
	}
	if recovered[last] || !errors.Is(err, segment.ErrCorrupt) {
		return fmt.Errorf("log: load the last segment: %w", err)
	}
	if err := l.beforeWrite(); err != nil {
		return err
	}
	// Damage after which the chain of valid batches resumes is passed
	// over as a read's repair passes over it in a sealed segment (an
	// empty batch in its place, the batches after it kept); the rest is
	// cut, as recovery cuts a torn tail.
	var fills []filledRange
	res, rerr := last.seg.RecoverRewrite(func(r io.ReaderAt, size int64, w io.Writer) (bool, error) {
		return l.passOverDamage(last.base, -1, end, r, size, w, &fills)
	}, false)
	if rerr != nil {
		return fmt.Errorf("log: recover the last segment: %w", errors.Join(err, rerr))
	}
	for _, f := range fills {
		l.recovery.Damage = append(l.recovery.Damage, fmt.Errorf("%w (filled with an empty batch; the valid batches after it kept)", f.d))
	}
	if len(fills) > 0 {
		last.filled.Store(&fills)
	}
	l.recovery.Clean = false
	l.recovery.SegmentsScanned++
	l.recovery.BytesScanned += res.ValidBytes + res.BytesCut
	l.recovery.BytesCut += res.BytesCut
	return nil
}

// startEmpty creates the first segment of an empty log at base.
func (l *Log) startEmpty(base int64, st State) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	seg, err := segment.Create(l.fs, l.dir, base, l.segOpts())
	if err != nil {
		return fmt.Errorf("log: create first segment: %w", err)
	}
	e := l.newEntry(seg)
	l.tree.ReplaceOrInsert(e)
	l.install(e, base, 0, base, st)
	return nil
}

// startOverAt removes every segment and starts empty at base (Kafka's
// truncateFullyAndStartAt).
func (l *Log) startOverAt(base int64, st State) error {
	if err := l.beforeWrite(); err != nil {
		return err
	}
	var all []*segEntry
	l.tree.Ascend(func(e *segEntry) bool {
		all = append(all, e)
		return true
	})
	if err := l.removeFrom(all); err != nil {
		return err
	}
	l.idxUnsynced = nil // their segments are gone
	l.idxFloor.Store(-1)
	return l.startEmpty(base, st)
}

// install sets the offsets once the segments are in place: everything
// present is durable (a clean shutdown fsynced it, recovery fsynced what it
// scanned, and the rest lies below the recovery point).
func (l *Log) install(active *segEntry, next, size, start int64, st State) {
	l.active = active
	// The active segment is under the caps like the sealed ones: closed
	// when idle, reopened by the next append or read.
	if active.seg.Loaded() {
		l.caps.add(&active.capEntry)
	} else {
		l.caps.setEligible(&active.capEntry)
	}
	l.activated = !active.seg.Sealed()
	l.next = next
	l.end.Store(next)
	l.activeAt = l.opts.Now()
	l.endMark = mark{offset: next, segBase: active.base, pos: size}
	l.durMark = l.endMark
	l.durable.Store(next)
	l.snap.Store(newSnapshot(l.tree.Clone(), start))
	if l.opts.ExternalHighWatermark {
		l.extHW = mark{offset: start, segBase: -1}
		if hw := min(max(st.HighWatermark, start), next); hw > start {
			if m, err := l.markFor(l.snap.Load(), hw); err == nil {
				l.extHW = m
			}
		}
	}
	l.publishHWLocked()
}
