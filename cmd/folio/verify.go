package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/index"
	folog "github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

func runVerify(e env, args []string) (err error) {
	fs, dir := newFlags(e, "verify", "verify [-topic T]")
	only := fs.String("topic", "", "check only this topic's partitions (metadata files are always checked)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	defer func() {
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("writing the output: %w", ferr)
		}
	}()
	v := &verifier{w: w}
	if err := v.dataDir(*dir, *only); err != nil {
		return err
	}
	fmt.Fprintf(w, "checked %d topics, %d partitions, %d segments, %d batches, %d records, %d index entries: %d problems, %d notes\n",
		v.topics, v.partitions, v.segments, v.batches, v.records, v.entries, v.problems, v.notes)
	if v.problems > 0 {
		return fmt.Errorf("%w: %s in %s; first: %s", ErrCorrupt, plural(v.problems, "problem"), *dir, v.first)
	}
	return nil
}

// verifier checks a data directory and prints what is wrong: PROBLEM lines
// for damage (verify then exits non-zero), NOTE lines for states a crash or
// a live Broker leaves that its next open handles (a torn tail, leftovers
// of an interrupted delete, a missing index).
//
// The checks are the owners': folio.CheckMetadata for the Broker's files,
// a read-only topic.Catalog for the catalog, segment.Verify for each
// segment (the rules recovery applies). On top of them the verifier
// decodes every record, which no CRC can vouch for, checks that segments do
// not overlap, and sorts what a crash or a live writer explains from
// damage.
type verifier struct {
	w     *bufio.Writer
	first string // the first problem, for the final message
	// clean is whether the directory holds a sound clean-shutdown marker:
	// no Broker wrote since one closed cleanly, so no crash state and no
	// write in progress is expected.
	clean bool

	topics, partitions, segments int
	batches, records, entries    int64
	problems, notes              int
}

func (v *verifier) problem(msg string) {
	v.problems++
	if v.first == "" {
		v.first = msg
	}
	fmt.Fprintf(v.w, "PROBLEM %s\n", msg)
}

func (v *verifier) note(msg string) {
	v.notes++
	fmt.Fprintf(v.w, "NOTE    %s\n", msg)
}

// dataDir checks the metadata files, then every partition. Only a directory
// that is not a data directory, or a catalog that cannot be read (without
// it the partitions are unknown), stops it early.
func (v *verifier) dataDir(dir, only string) error {
	if err := checkFormat(dir); err != nil {
		if !folio.IsCorrupt(err) {
			return err
		}
		v.problem(err.Error())
		return nil
	}
	markerDamaged := false
	for _, err := range folio.CheckMetadata(dir) {
		v.problem(err.Error())
		markerDamaged = markerDamaged || strings.Contains(err.Error(), folio.CleanShutdownFile)
	}
	_, err := os.Stat(filepath.Join(dir, folio.CleanShutdownFile))
	v.clean = err == nil && !markerDamaged // a damaged marker counts as absent, as for the Broker
	if err := v.leftovers(dir); err != nil {
		return err
	}
	topics, err := readCatalog(dir)
	if err != nil {
		if !errors.Is(err, topic.ErrCorrupt) {
			return err
		}
		v.problem(fmt.Sprintf("%s: %v (the topics are unknown: partitions not checked)", filepath.Join(dir, topic.CatalogFile), err))
		return nil
	}
	d := &dataDir{path: dir, topics: topics}
	if only != "" {
		in, err := d.topic(only)
		if err != nil {
			return err
		}
		topics = []topic.Info{in}
	} else {
		stray, err := d.strayEntries()
		if err != nil {
			return err
		}
		for _, s := range stray {
			v.note(fmt.Sprintf("%s: not a partition of a topic in the catalog (a leftover of an interrupted create or delete, removed at the next open, or a foreign file)", filepath.Join(dir, s)))
		}
	}
	// The recovery points of a clean shutdown are the logs' ends; a
	// damaged checkpoint is reported above and checks nothing here.
	// After an unclean one they are what was fsynced when the checkpoint
	// was written: the log cannot end below them unless damage took it.
	ends := map[string]int64{}
	ckpt, _ := folio.ReadCheckpoint(dir)
	for _, e := range ckpt {
		ends[fmt.Sprintf("%v/%d", e.TopicID, e.Partition)] = e.RecoveryPoint
	}
	for _, in := range topics {
		v.topics++
		for p := int32(0); p < in.Config.Partitions; p++ {
			v.partitions++
			end, ok := ends[fmt.Sprintf("%v/%d", in.ID, p)]
			if !ok {
				end = -1
			}
			if err := v.partition(d.partitionDir(in.Name, p), max(int(in.Config.MaxMessageBytes), defaultMaxBatch), end); err != nil {
				return err
			}
		}
	}
	return nil
}

// producerStateDir is the directory of the Broker's producer-state
// snapshots in a data directory.
const producerStateDir = ".producer-state"

// leftovers notes the files beside the metadata files that no Broker
// reads: temporary files of an interrupted metadata write (harmless: the
// next write of that file replaces them) and, in the producer-state
// directory, anything but a snapshot (removed at the next writing open).
// Partition directories are strayEntries' to judge.
func (v *verifier) leftovers(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") && !e.IsDir() {
			v.note(fmt.Sprintf("%s: left by an interrupted write of %s (replaced at its next write)",
				filepath.Join(dir, e.Name()), strings.TrimSuffix(e.Name(), ".tmp")))
		}
	}
	sdir := filepath.Join(dir, producerStateDir)
	entries, err = os.ReadDir(sdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".snapshot") || e.IsDir() {
			v.note(fmt.Sprintf("%s: not a producer-state snapshot (a leftover of an interrupted write, removed at the next open)",
				filepath.Join(sdir, e.Name())))
		}
	}
	return nil
}

// partition checks one partition directory: its files, then each segment,
// and the chain of offsets: segments neither overlap nor leave a hole
// (offsets are contiguous from segment to segment; compaction makes gaps
// inside segments only), and, in a directory closed cleanly, the log ends
// where its checkpoint says (cleanEnd; -1 when unknown), or, after an
// unclean shutdown, not below the recovery point it checkpointed.
func (v *verifier) partition(dir string, maxBatch int, checkpointed int64) error {
	cleanEnd, durableEnd := int64(-1), int64(-1)
	if v.clean {
		cleanEnd = checkpointed
	} else {
		durableEnd = checkpointed
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		v.problem(fmt.Sprintf("%s: partition directory missing (the catalog names it)", dir))
		return nil
	}
	if err != nil {
		return err
	}
	logs := map[int64]bool{}
	indexed := map[int64]bool{}     // bases with a .index or .timeindex
	renamed := map[int64][]string{} // bases' .log files under a transient suffix
	marker := false                 // a compaction swap under way (or cut short) explains .deleted files
	for _, e := range entries {
		marker = marker || e.Name() == folog.SwapCommitFile
		base, suffix, ok := segment.ParseFileName(e.Name())
		switch {
		case !ok:
		case suffix == segment.LogSuffix:
			logs[base] = true
		case suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix:
			indexed[base] = true
		case strings.HasPrefix(suffix, segment.LogSuffix+"."):
			renamed[base] = append(renamed[base], e.Name())
		}
	}
	swaps, markerErr, err := folog.CheckSwaps(nil, dir)
	if err != nil {
		return err
	}
	if markerErr != nil {
		v.problem(fmt.Sprintf("%v (the next open discards every .log.swap and keeps the live segments)", markerErr))
	}
	swapDone := map[string]bool{}
	for _, sc := range swaps {
		swapDone[filepath.Base(sc.Path)] = true
		switch {
		case sc.Complete:
			v.note(fmt.Sprintf("%s: a finished compaction swap of offsets %d to %d (installed at the next open)", sc.Path, sc.Base, sc.End-1))
		case sc.Unfinished:
			v.note(fmt.Sprintf("%s: left by an interrupted compaction (removed at the next open)", sc.Path))
		default:
			v.problem(fmt.Sprintf("%v (the next open discards it and keeps the live segments)", sc.Err))
		}
	}
	for _, e := range entries {
		if swapDone[e.Name()] {
			continue
		}
		base, suffix, ok := segment.ParseFileName(e.Name())
		p := filepath.Join(dir, e.Name())
		switch {
		case e.Name() == folog.SwapCommitFile, e.Name() == folog.SwapCommitFile+".tmp":
			if len(swaps) == 0 {
				v.note(fmt.Sprintf("%s: left by a finished or interrupted compaction swap (removed at the next open)", p))
			}
		case e.Name() == folog.EpochCheckpointFile:
			v.epochCheckpoint(p)
		case e.Name() == folog.EpochCheckpointFile+".tmp":
			v.note(fmt.Sprintf("%s: left by an interrupted leader-epoch checkpoint (replaced at the next write)", p))
		case !ok:
			v.note(fmt.Sprintf("%s: not a segment file", p))
		case suffix == segment.LogSuffix:
		case suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix:
			if !logs[base] && marker {
				v.note(fmt.Sprintf("%s: index without its .log (removed at the next open)", p))
			}
		case strings.HasSuffix(suffix, segment.StraySuffix):
			v.note(fmt.Sprintf("%s: set aside by an open as no part of the log (kept for inspection; the log never reads it)", p))
		case suffix == segment.LogSuffix+segment.DeletedSuffix && !marker && len(logs) > 0 && base > minKey(logs) && base < maxKey(logs):
			v.problem(fmt.Sprintf("%s: a segment inside the log renamed .deleted (no deletion leaves one there; the next open renames it back)", p))
		case strings.HasSuffix(suffix, segment.DeletedSuffix), strings.HasSuffix(suffix, ".cleaned"),
			strings.HasSuffix(suffix, ".swap"), strings.HasSuffix(suffix, segment.TruncateSuffix):
			v.note(fmt.Sprintf("%s: left by an interrupted delete, compaction or truncation (resolved at the next open)", p))
		default:
			v.note(fmt.Sprintf("%s: not a segment file", p))
		}
	}
	bases, err := segmentBases(dir)
	if err != nil {
		return err
	}
	// missing names the .log that should hold offsets from..to and any
	// file of that base under a transient suffix (a rename no step of the
	// log leaves in place of a live segment).
	reported := map[int64]bool{}
	missing := func(from int64) string {
		reported[from] = true
		msg := segment.LogPath(dir, from)
		if r := renamed[from]; len(r) > 0 {
			msg += fmt.Sprintf(" (found renamed %s)", strings.Join(r, ", "))
		}
		return msg
	}
	prevEnd := int64(-1)
	prevWhole := true // the previous segment's end is known: no damage cut its valid prefix short
	for i, base := range bases {
		v.segments++
		last := i == len(bases)-1
		if base < prevEnd {
			v.problem(fmt.Sprintf("%s: base offset %d overlaps the previous segment, which ends at offset %d",
				segment.LogPath(dir, base), base, prevEnd))
		}
		if i > 0 && base > prevEnd && prevWhole {
			v.problem(fmt.Sprintf("%s: missing: offsets %d to %d are in no segment: the previous segment, %s, ends at offset %d, %s starts at %d (the next open fills the hole; its records are lost)",
				missing(prevEnd), prevEnd, base-1, segment.LogPath(dir, bases[i-1]), prevEnd, segment.FileName(base, segment.LogSuffix), base))
		}
		if fi, err := os.Stat(segment.LogPath(dir, base)); err == nil && fi.Size() == 0 && !last {
			reported[base] = true
			v.problem(fmt.Sprintf("%s: empty, in a segment that is not the last (its records are lost)", segment.LogPath(dir, base)))
		} else if err == nil && fi.Size() == 0 && cleanEnd < 0 {
			// The last segment, after an unclean shutdown or beside a live
			// writer: empty is a roll's new segment, unless an index has
			// entries (an active index is preallocated with zeros, and
			// gets its first entry after IndexIntervalBytes of batches).
			if idx := indexEvidence(dir, base); idx != "" {
				reported[base] = true
				v.problem(fmt.Sprintf("%s: empty, but %s has entries: records it held are lost", segment.LogPath(dir, base), idx))
			}
		}
		end, whole, err := v.segment(dir, base, last, maxBatch)
		if err != nil {
			return err
		}
		if !last && whole && end > bases[i+1] {
			// The last batch claims offsets from the next segment's base
			// on while the batches before it end below it: its base
			// offset, outside the CRC, was damaged (the open and the
			// reads pass over it as such). Its segment is the damaged
			// file, not the next one.
			path := segment.LogPath(dir, base)
			if pos, first, prevLast, ok := lastBatch(path); ok && prevLast < bases[i+1] && first <= end-1 {
				v.problem(fmt.Sprintf("%s: position %d: its last batch claims offsets %d to %d, reaching the next segment, %s (a damaged base offset: its records are lost)",
					path, pos, first, end-1, segment.FileName(bases[i+1], segment.LogSuffix)))
				reported[base] = true
				end = bases[i+1]
			}
		}
		prevWhole = whole
		if last && durableEnd > end && whole && !reported[base] {
			reported[base] = true
			v.problem(fmt.Sprintf("%s: the log ends at offset %d, below the recovery point %d its last checkpoint recorded (records fsynced then): offsets %d to %d are lost",
				segment.LogPath(dir, base), end, durableEnd, end, durableEnd-1))
		}
		if i == len(bases)-1 && cleanEnd >= 0 && whole {
			switch {
			case end < cleanEnd:
				v.problem(fmt.Sprintf("%s: the log ends at offset %d, below the end %d its clean shutdown checkpointed: offsets %d to %d are lost",
					segment.LogPath(dir, base), end, cleanEnd, end, cleanEnd-1))
			case end > base && base >= cleanEnd && i > 0:
				v.problem(fmt.Sprintf("%s: holds offsets %d to %d, beyond the end %d the log had at its clean shutdown (not part of the log: the next open sets it aside)",
					segment.LogPath(dir, base), base, end-1, cleanEnd))
			case end > cleanEnd:
				// A batch past the end the shutdown recorded: a flipped
				// base offset (outside the CRC) moved it there.
				path := segment.LogPath(dir, base)
				pos, first := batchPast(path, cleanEnd)
				v.problem(fmt.Sprintf("%s: position %d: a batch at offsets %d to %d, beyond the end %d the log had at its clean shutdown (a damaged base offset: its records are lost)",
					path, pos, first, end-1, cleanEnd))
			}
		}
		prevEnd = max(prevEnd, end)
	}
	// A segment's indexes without its .log: no step of the log leaves
	// them so (a delete renames the .log and its indexes before one sync
	// of the directory; a roll creates all three before one), so the
	// .log was removed or renamed, be it the last one or the only one.
	// A compaction swap under way explains it.
	for base := range indexed {
		if !logs[base] && !reported[base] && !marker {
			v.problem(fmt.Sprintf("%s: missing: its indexes are here, the .log is not (its records are lost; the next open removes the indexes)", missing(base)))
		}
	}
	return nil
}

// indexEvidence returns the path of an index file of the segment at base
// that holds an entry (a byte other than zero), or "".
func indexEvidence(dir string, base int64) string {
	for _, p := range []string{segment.IndexPath(dir, base), segment.TimeIndexPath(dir, base)} {
		data, err := os.ReadFile(p)
		if err == nil && slices.ContainsFunc(data, func(b byte) bool { return b != 0 }) {
			return p
		}
	}
	return ""
}

// segment checks one segment with segment.Verify and decodes the records
// of its valid prefix. It returns the offset after that prefix.
//
// Two things segment.Verify reports are expected rather than damage in the
// last segment of a directory not closed cleanly: an incomplete batch at
// the end of the .log (a write in progress beside a live Broker, or a torn
// write a crash left, which recovery cuts) and index entries pointing past
// the last batch (index pages written back before log pages; recovery
// rebuilds the indexes). Those are notes there and problems anywhere else.
// whole reports that the valid prefix is the whole .log (so end is where
// the segment ends, not where damage cut it short).
// Index entries pointing past damage in the .log are that damage's
// consequence, noted once per file rather than reported one by one.
func (v *verifier) segment(dir string, base int64, last bool, maxBatch int) (end int64, whole bool, err error) {
	logPath := segment.LogPath(dir, base)
	rep, err := segment.Verify(nil, dir, base)
	if errors.Is(err, fs.ErrNotExist) {
		return base, false, nil // deleted by a live Broker's retention since the listing
	}
	if err != nil {
		return 0, false, err
	}
	v.batches += int64(rep.Batches)
	v.entries += int64(rep.OffsetEntries + rep.TimeEntries)
	tornAt := tornTail(logPath, rep)
	// Entries past the valid prefix, when the log itself has a problem
	// there: consequences of that problem, summed up per index file.
	past := map[string]int{}
	for _, p := range rep.Problems {
		switch {
		case p.Entry < 0 && errors.Is(p.Err, fs.ErrNotExist):
			v.note(fmt.Sprintf("%s: index file missing (rebuilt from the .log at the next open)", p.Path))
		case p.Path == logPath && p.Position == tornAt:
			msg := fmt.Sprintf("%s: position %d: incomplete batch: %d bytes at the end of the file", logPath, p.Position, rep.LogBytes-p.Position)
			switch {
			case !last:
				v.problem(msg + ", in a segment that is not the last")
			case v.clean:
				v.problem(msg + ", in a directory closed cleanly")
			default:
				v.note(msg + " (a write in progress, or a torn write that recovery cuts)")
			}
		case p.Path != logPath && entryPastPrefix(p, base, rep):
			switch {
			case rep.ValidBytes < rep.LogBytes:
				past[p.Path]++
			case last && !v.clean:
				v.note(fmt.Sprintf("%s: entry %d points past the last batch (an index ahead of its log after a crash; rebuilt at the next open)", p.Path, p.Entry))
			default:
				v.problem(describeProblem(p, logPath))
			}
		default:
			v.problem(describeProblem(p, logPath))
		}
	}
	for _, path := range []string{segment.IndexPath(dir, base), segment.TimeIndexPath(dir, base)} {
		if n := past[path]; n > 0 {
			v.note(fmt.Sprintf("%s: %d entries point at or past position %d of the .log, where its valid prefix ends (they go when recovery cuts the log there)", path, n, rep.ValidBytes))
		}
	}
	if err := v.decodeRecords(logPath, base, rep.ValidBytes, maxBatch); err != nil {
		return 0, false, err
	}
	return rep.LastOffset + 1, rep.ValidBytes == rep.LogBytes, nil
}

// tornTail returns the position of an incomplete batch that ends the .log
// as segment.Verify saw it (a header cut short, or a batch longer than
// the bytes left), or -1 if the file does not end that way.
func tornTail(logPath string, rep segment.Report) int64 {
	pos := int64(-1)
	for _, p := range rep.Problems {
		if p.Path == logPath {
			pos = p.Position
		}
	}
	if pos < 0 {
		return -1
	}
	left := rep.LogBytes - pos
	if left < record.HeaderSize {
		return pos
	}
	f, err := os.Open(logPath)
	if err != nil {
		return -1
	}
	defer f.Close()
	var hdr [record.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], pos); err != nil {
		return -1
	}
	if size, err := record.CheckHeader(hdr[:]); err != nil || int64(size) <= left {
		return -1
	}
	// A torn write leaves a prefix of one batch. A damaged length field
	// reads the same, unless the bytes say otherwise: they are a whole
	// batch under the length the file leaves (the CRC does not cover the
	// length), or a valid batch starts after pos and the chain from it
	// ends the file.
	rest := make([]byte, left)
	if _, err := f.ReadAt(rest, pos); err != nil && !errors.Is(err, io.EOF) {
		return pos
	}
	if record.Batch(rest).ComputeCRC() == record.Batch(rest).CRC() || validAfter(rest) {
		return -1
	}
	return pos
}

// validAfter reports whether some position after the start of b starts a
// chain of valid batches (CRC included), each where the one before ends,
// with ascending offsets, that ends exactly at the end of b.
func validAfter(b []byte) bool {
	for q := 1; q+record.HeaderSize <= len(b); q++ {
		if chainEnds(b[q:]) {
			return true
		}
	}
	return false
}

func chainEnds(b []byte) bool {
	last := int64(-1)
	for len(b) > 0 {
		n, err := record.CheckHeader(b)
		if err != nil || n > len(b) {
			return false
		}
		bt := record.Batch(b[:n])
		if bt.BaseOffset() <= last || bt.Validate() != nil {
			return false
		}
		last, b = bt.LastOffset(), b[n:]
	}
	return true
}

// entryPastPrefix reports whether the index entry of problem p points
// beyond the segment's valid prefix.
func entryPastPrefix(p segment.Problem, base int64, rep segment.Report) bool {
	if p.Entry < 0 {
		return false
	}
	f, err := os.Open(p.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	switch filepath.Ext(p.Path) {
	case segment.IndexSuffix:
		var e [index.OffsetEntrySize]byte
		if _, err := f.ReadAt(e[:], p.Position); err != nil {
			return false
		}
		return int64(binary.BigEndian.Uint32(e[4:])) >= rep.ValidBytes
	case segment.TimeIndexSuffix:
		var e [index.TimeEntrySize]byte
		if _, err := f.ReadAt(e[:], p.Position); err != nil {
			return false
		}
		return base+int64(binary.BigEndian.Uint32(e[8:])) > rep.LastOffset
	}
	return false
}

// describeProblem formats a problem of segment.Verify as the other
// commands name damage: file, byte position, and the batch's offset where
// its header is readable.
func describeProblem(p segment.Problem, logPath string) string {
	if p.Entry >= 0 {
		return fmt.Sprintf("%s: entry %d (position %d): %v", p.Path, p.Entry, p.Position, p.Err)
	}
	if p.Path == logPath {
		if off, ok := baseOffsetAt(logPath, p.Position); ok {
			return (&corruptError{Path: p.Path, Pos: p.Position, Offset: off, Err: p.Err}).Error()
		}
	}
	return fmt.Sprintf("%s: position %d: %v", p.Path, p.Position, p.Err)
}

// batchPast returns the position and base offset of the first batch of
// the .log at path whose last offset is at or past end, walking the
// batches' framing (-1 and end when none is found).
func batchPast(path string, end int64) (pos, base int64) {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1, end
	}
	for p := 0; p < len(data); {
		b, _, err := record.Parse(data[p:])
		if err != nil {
			break
		}
		if b.LastOffset() >= end {
			return int64(p), b.BaseOffset()
		}
		p += len(b)
	}
	return -1, end
}

// lastBatch returns the position and base offset of the last batch of the
// .log at path, walking the batches' framing, and the last offset before
// it (-1 when it is the first); ok is false when the file holds no batch
// or its framing breaks before the end.
func lastBatch(path string) (pos, base, prevLast int64, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, false
	}
	pos, prevLast = -1, -1
	last := int64(-1)
	for p := 0; p < len(data); {
		b, _, err := record.Parse(data[p:])
		if err != nil {
			return 0, 0, 0, false
		}
		prevLast, last = last, b.LastOffset()
		pos, base = int64(p), b.BaseOffset()
		p += len(b)
	}
	return pos, base, prevLast, pos >= 0
}

// baseOffsetAt reads the base offset field of the batch header at pos.
func baseOffsetAt(path string, pos int64) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[:])), true
}

// decodeRecords decodes every record of the valid prefix [0, validBytes) of a
// .log, which checks the framing a CRC cannot vouch for (a writer's bug, a
// bad compressed stream), and counts them.
func (v *verifier) decodeRecords(logPath string, base, validBytes int64, maxBatch int) error {
	lf, err := openLogFile(logPath, base, maxBatch)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lf.Close()
	for lf.Pos() < validBytes {
		b, pos, err := lf.Next()
		if err != nil {
			var ce *corruptError
			var torn *tornError
			if errors.Is(err, io.EOF) || errors.As(err, &ce) || errors.As(err, &torn) {
				return nil // the file changed since segment.Verify read it
			}
			return err
		}
		it := b.Records(&record.DecodeOptions{SkipCRC: true})
		n := int64(0)
		for it.Next() {
			n++
		}
		err = it.Err()
		it.Close()
		v.records += n
		switch {
		case err != nil:
			v.problem((&corruptError{Path: logPath, Pos: pos, Offset: b.BaseOffset(), Err: fmt.Errorf("records do not decode: %w", err)}).Error())
		case n != int64(b.NumRecords()):
			v.problem((&corruptError{Path: logPath, Pos: pos, Offset: b.BaseOffset(), Err: fmt.Errorf("header counts %d records, the batch holds %d", b.NumRecords(), n)}).Error())
		}
	}
	return nil
}

func minKey(m map[int64]bool) int64 {
	out := int64(math.MaxInt64)
	for k := range m {
		out = min(out, k)
	}
	return out
}

func maxKey(m map[int64]bool) int64 {
	out := int64(math.MinInt64)
	for k := range m {
		out = max(out, k)
	}
	return out
}

// epochCheckpoint checks a partition's leader-epoch checkpoint: one that
// does not parse is a problem (the next writing open rebuilds it from the
// batches and reports it).
func (v *verifier) epochCheckpoint(path string) {
	data, err := os.ReadFile(path)
	if err == nil {
		_, err = folog.ParseEpochCheckpoint(data)
	}
	if err != nil {
		v.problem(fmt.Sprintf("%s: %v (rebuilt from the batches at the next open)", path, err))
	}
}
