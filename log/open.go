package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"

	"github.com/foliolog/folio/record"
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
// After a clean shutdown (st.Clean) Open costs O(1) per segment: sealed
// segments are not opened, scanned or mapped until first used, and only the
// last one is loaded to append to. After an unclean one, the segments from
// the one holding st.RecoveryPoint onwards are scanned batch by batch and
// cut at the first bad batch; the segments after a cut, or after a gap in
// the offsets, are removed, so the log reopens to a valid prefix. Before
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
		segOpts:   segmentOptions(o),
		caps:      caps,
		tree:      btree.NewG[*segEntry](16, lessEntry),
		hwWake:    newNotifier(),
		quit:      make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
		flushKick: make(chan struct{}, 1),
		flushDone: make(chan struct{}),
	}
	l.idle.L = &l.appendMu
	l.hwWake.level = l.waitLevel
	if err := l.load(st); err != nil {
		l.abandon()
		return nil, markCorrupt(err)
	}
	if err := l.initCompaction(st); err != nil {
		l.abandon()
		return nil, err
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
	junk     []string           // names to remove
	minClean int64              // smallest base of a .cleaned file
}

func (l *Log) list() (*dirListing, error) {
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("log: list %s: %w", l.dir, err)
	}
	d := &dirListing{logs: map[int64]bool{}, indexes: map[int64][]string{}, minClean: math.MaxInt64}
	for _, de := range ents {
		name := de.Name()
		base, suffix, ok := segment.ParseFileName(name)
		if !ok || de.IsDir() {
			continue // not ours: leave it alone
		}
		switch {
		case strings.HasSuffix(suffix, segment.DeletedSuffix):
			d.junk = append(d.junk, name)
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
	if err := l.cleanup(d); err != nil {
		return err
	}
	bases := make([]int64, 0, len(d.logs))
	for b := range d.logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	entries := make([]*segEntry, 0, len(bases)+1)
	for _, b := range bases {
		seg, err := segment.Open(l.fs, l.dir, b, &l.segOpts)
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
	if !st.Clean {
		if recovered, err = l.recover(entries, max(st.RecoveryPoint, 0)); err != nil {
			return err
		}
		entries = entries[:0]
		l.tree.Ascend(func(e *segEntry) bool {
			entries = append(entries, e)
			return true
		})
	}
	last := entries[len(entries)-1]
	if err := l.loadLast(last, recovered); err != nil {
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

// cleanup resolves what a crash left behind, by Kafka's rules (LogLoader):
// .deleted and .cleaned files go; a .log.swap at or above the smallest
// .cleaned offset belongs to an unfinished split and goes too; every other
// .log.swap is complete, so the segments it covers go and it takes its live
// name; index files without a .log go.
func (l *Log) cleanup(d *dirListing) error {
	var swaps []int64
	for _, b := range d.swaps {
		if b >= d.minClean {
			d.junk = append(d.junk, segment.FileName(b, segment.LogSuffix+swapSuffix))
		} else {
			swaps = append(swaps, b)
		}
	}
	var renames [][2]string
	for _, b := range swaps {
		name := segment.FileName(b, segment.LogSuffix+swapSuffix)
		next, err := l.swapEnd(filepath.Join(l.dir, name), b)
		if err != nil {
			return err
		}
		for lb := range d.logs {
			if lb >= b && lb < max(next, b+1) {
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
	for b, names := range d.indexes {
		if !d.logs[b] {
			d.junk = append(d.junk, names...)
		}
	}
	if len(d.junk) == 0 && len(renames) == 0 {
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
	for _, r := range renames {
		if err := l.fs.Rename(filepath.Join(l.dir, r[0]), filepath.Join(l.dir, r[1])); err != nil {
			return fmt.Errorf("log: complete swap %s: %w", filepath.Join(l.dir, r[0]), err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync dir %s: %w", l.dir, err)
	}
	return nil
}

// swapEnd returns the offset after the last whole batch of a .swap file
// (its next offset), walking batch headers. A swap is written and fsynced
// completely before it is renamed to .swap, so a torn one means something
// else went wrong; its valid prefix still bounds what it replaces.
func (l *Log) swapEnd(path string, base int64) (int64, error) {
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("log: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("log: stat %s: %w", path, err)
	}
	next := base
	var hdr [record.HeaderSize]byte
	for pos := int64(0); pos+record.HeaderSize <= fi.Size(); {
		if _, err := f.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("log: read %s at %d: %w", path, pos, err)
		}
		size, err := record.CheckHeader(hdr[:])
		if err != nil || pos+int64(size) > fi.Size() {
			break
		}
		next = record.Batch(hdr[:]).LastOffset() + 1
		pos += int64(size)
	}
	return next, nil
}

// recoverWorkers bounds how many segments of one log recover at once. A
// segment's scan is CPU-bound (CRC) while its fsyncs wait on the disk, and
// concurrent fsyncs share the file system's journal commits, so a few at a
// time recover much faster than one after another.
const recoverWorkers = 8

// recover scans the segments from the one holding rp to the end (Kafka's
// unflushed segments), cutting torn or corrupt tails; a cut, or a gap in
// the offsets between two scanned segments, removes every later segment,
// because records after a hole cannot belong to the valid prefix. The
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
	errs := make([]error, len(scan))
	sem := make(chan struct{}, recoverWorkers)
	var wg sync.WaitGroup
	for i, e := range scan {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = e.seg.Recover()
		}()
	}
	wg.Wait()

	kept := map[*segEntry]bool{}
	var prevNext int64 = -1
	for i, e := range scan {
		if prevNext >= 0 && e.base != prevNext {
			return kept, l.removeFrom(scan[i:])
		}
		if errs[i] != nil {
			return nil, fmt.Errorf("log: recover %s: %w", e.seg, errs[i])
		}
		res := results[i]
		kept[e] = true
		l.recovery.SegmentsScanned++
		l.recovery.BytesScanned += res.ValidBytes + res.BytesCut
		l.recovery.BytesCut += res.BytesCut
		prevNext = res.LastOffset + 1
		if res.BytesCut > 0 {
			return kept, l.removeFrom(scan[i+1:])
		}
	}
	return kept, nil
}

// removeFrom deletes the given segments (all after a cut) at open.
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
// recovered rather than refused.
func (l *Log) loadLast(last *segEntry, recovered map[*segEntry]bool) error {
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
	res, rerr := last.seg.Recover()
	if rerr != nil {
		return fmt.Errorf("log: recover the last segment: %w", errors.Join(err, rerr))
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
	seg, err := segment.Create(l.fs, l.dir, base, &l.segOpts)
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
