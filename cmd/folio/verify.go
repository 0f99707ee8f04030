package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/foliolog/folio"
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
		return fmt.Errorf("%w: %d problems in %s; first: %s", ErrCorrupt, v.problems, *dir, v.first)
	}
	return nil
}

// verifier checks a data directory and prints what is wrong: PROBLEM lines
// for damage (verify then exits non-zero), NOTE lines for states a crash or
// a live Broker leaves that its next open handles (a torn tail, leftovers
// of an interrupted delete, a missing index).
type verifier struct {
	w     *bufio.Writer
	first string // the first problem, for the final message
	// clean is whether the directory holds a clean-shutdown marker: no
	// Broker wrote since one closed cleanly, so no crash state is expected.
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
	if err := checkFormatFile(dir); err != nil {
		var ce *corruptError
		if errors.As(err, &ce) {
			v.problem(err.Error())
			return nil
		}
		return err
	}
	topics, err := readCatalog(dir)
	if err != nil {
		var ce *corruptError
		if errors.As(err, &ce) {
			v.problem(err.Error() + " (the topics are unknown: partitions not checked)")
			return nil
		}
		return err
	}
	if _, err := readCheckpoint(dir, topics); err != nil {
		v.problem(err.Error())
	}
	if err := checkCleanMarker(dir); err != nil {
		v.problem(err.Error())
	} else {
		_, err := os.Stat(filepath.Join(dir, folio.CleanShutdownFile))
		v.clean = err == nil
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
	for _, in := range topics {
		v.topics++
		for p := int32(0); p < in.Config.Partitions; p++ {
			v.partitions++
			if err := v.partition(d.partitionDir(in.Name, p), max(int(in.Config.MaxMessageBytes), defaultMaxBatch)); err != nil {
				return err
			}
		}
	}
	return nil
}

// partition checks one partition directory: its files, then each segment,
// and that segments do not overlap.
func (v *verifier) partition(dir string, maxBatch int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		v.problem(fmt.Sprintf("%s: partition directory missing (the catalog names it)", dir))
		return nil
	}
	if err != nil {
		return err
	}
	logs := map[int64]bool{}
	for _, e := range entries {
		if base, suffix, ok := segment.ParseFileName(e.Name()); ok && suffix == segment.LogSuffix {
			logs[base] = true
		}
	}
	for _, e := range entries {
		base, suffix, ok := segment.ParseFileName(e.Name())
		p := filepath.Join(dir, e.Name())
		switch {
		case !ok:
			v.note(fmt.Sprintf("%s: not a segment file", p))
		case suffix == segment.LogSuffix:
		case suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix:
			if !logs[base] {
				v.note(fmt.Sprintf("%s: index without its .log (removed at the next open)", p))
			}
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
	prevEnd := int64(-1)
	for i, base := range bases {
		v.segments++
		if base < prevEnd {
			v.problem(fmt.Sprintf("%s: base offset %d overlaps the previous segment, which ends at offset %d",
				segment.LogPath(dir, base), base, prevEnd))
		}
		end, err := v.segment(dir, base, i == len(bases)-1, v.clean, maxBatch)
		if err != nil {
			return err
		}
		prevEnd = max(prevEnd, end)
	}
	return nil
}

// segment checks one segment: every batch (framing, CRC, offsets, records)
// and every index entry against the batches. It returns the offset after
// the last valid batch. The indexes are read before the log because a live
// Broker writes a batch before its index entry: an entry seen first always
// finds its batch in the log read after it.
func (v *verifier) segment(dir string, base int64, last, clean bool, maxBatch int) (int64, error) {
	logPath := segment.LogPath(dir, base)
	// The descriptor keeps the .log readable if a live Broker's retention
	// deletes the segment from here on; one deleted since the listing is
	// skipped.
	lf, err := openLogFile(logPath, base, maxBatch)
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	offs, offInfo, err := readOffsetIndex(segment.IndexPath(dir, base), base)
	if err != nil {
		return 0, err
	}
	times, timeInfo, err := readTimeIndex(segment.TimeIndexPath(dir, base), base)
	if err != nil {
		return 0, err
	}
	if offInfo.Missing || timeInfo.Missing {
		if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
			return base, nil // deleted while we read: its indexes went first
		}
		v.note(fmt.Sprintf("%s: index file missing (rebuilt from the .log at the next open)", logPath))
	}
	v.entries += int64(len(offs) + len(times))
	for _, info := range []indexFile{offInfo, timeInfo} {
		for _, p := range info.Problems {
			v.problem(fmt.Sprintf("%s: %s", info.Path, p))
		}
	}
	v.indexOrder(offInfo.Path, timeInfo.Path, offs, times)

	end := base
	oi, ti := 0, 0
	framed := true
	for {
		b, pos, err := lf.NextRaw()
		var torn *tornError
		var ce *corruptError
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
		case errors.As(err, &torn):
			switch {
			case !last:
				v.problem(fmt.Sprintf("%v, in a segment that is not the last", err))
			case clean:
				v.problem(fmt.Sprintf("%v, in a directory closed cleanly", err))
			default:
				v.note(fmt.Sprintf("%v (a write in progress, or a torn write that recovery cuts)", err))
			}
		case errors.As(err, &ce):
			v.problem(fmt.Sprintf("%v; the rest of the file cannot be framed", err))
			framed = false
		default:
			return 0, err
		}
		if err != nil {
			break
		}
		v.batches++
		if err := lf.check(b); err != nil {
			v.problem((&corruptError{Path: logPath, Pos: pos, Offset: b.BaseOffset(), Err: err}).Error())
		} else {
			end = b.LastOffset() + 1
			// Records are decoded only under a good CRC: in a batch whose
			// bytes are known damaged, they would only repeat the problem.
			v.recordsOf(logPath, pos, b)
		}
		for ; oi < len(offs) && offs[oi].Pos <= pos; oi++ {
			e := offs[oi]
			switch {
			case e.Pos < pos:
				v.problem(fmt.Sprintf("%s: entry %d (offset %d -> position %d): no batch starts at that position", offInfo.Path, oi, e.Offset, e.Pos))
			case e.Offset != b.LastOffset():
				v.problem(fmt.Sprintf("%s: entry %d (offset %d -> position %d): the batch there ends at offset %d", offInfo.Path, oi, e.Offset, e.Pos, b.LastOffset()))
			}
		}
		for ; ti < len(times) && times[ti].Offset <= b.LastOffset(); ti++ {
			e := times[ti]
			switch {
			case e.Offset < b.BaseOffset():
				v.problem(fmt.Sprintf("%s: entry %d (timestamp %d -> offset %d): no batch ends at that offset", timeInfo.Path, ti, e.Timestamp, e.Offset))
			case e.Offset != b.LastOffset():
				v.problem(fmt.Sprintf("%s: entry %d (timestamp %d -> offset %d): not the last offset of its batch (%d to %d)", timeInfo.Path, ti, e.Timestamp, e.Offset, b.BaseOffset(), b.LastOffset()))
			case e.Timestamp != b.MaxTimestamp():
				v.problem(fmt.Sprintf("%s: entry %d (timestamp %d -> offset %d): the batch's max timestamp is %d", timeInfo.Path, ti, e.Timestamp, e.Offset, b.MaxTimestamp()))
			}
		}
	}
	if framed {
		// Entries past the last batch point at nothing: an index ahead of
		// a log that lost its tail. In the last segment of a directory not
		// closed cleanly that is what a power cut leaves (index pages
		// written back before log pages), and recovery rebuilds the index;
		// anywhere else it is damage. After a framing error the rest of the
		// log is unreadable, which was reported already.
		report := v.problem
		if last && !clean {
			report = v.note
		}
		for ; oi < len(offs); oi++ {
			report(fmt.Sprintf("%s: entry %d (offset %d -> position %d): past the last complete batch", offInfo.Path, oi, offs[oi].Offset, offs[oi].Pos))
		}
		for ; ti < len(times); ti++ {
			report(fmt.Sprintf("%s: entry %d (timestamp %d -> offset %d): past the last complete batch", timeInfo.Path, ti, times[ti].Timestamp, times[ti].Offset))
		}
	}
	return end, nil
}

// indexOrder checks the order lookups rely on: offset entries strictly
// ascending in offset and position, time entries strictly ascending in
// timestamp and never descending in offset.
func (v *verifier) indexOrder(offPath, timePath string, offs []offsetEntry, times []timeEntry) {
	for i := 1; i < len(offs); i++ {
		if offs[i].Offset <= offs[i-1].Offset || offs[i].Pos <= offs[i-1].Pos {
			v.problem(fmt.Sprintf("%s: entry %d (offset %d -> position %d) does not follow entry %d (offset %d -> position %d)",
				offPath, i, offs[i].Offset, offs[i].Pos, i-1, offs[i-1].Offset, offs[i-1].Pos))
		}
	}
	for i := 1; i < len(times); i++ {
		if times[i].Timestamp <= times[i-1].Timestamp || times[i].Offset < times[i-1].Offset {
			v.problem(fmt.Sprintf("%s: entry %d (timestamp %d -> offset %d) does not follow entry %d (timestamp %d -> offset %d)",
				timePath, i, times[i].Timestamp, times[i].Offset, i-1, times[i-1].Timestamp, times[i-1].Offset))
		}
	}
}

// recordsOf decodes every record of a batch, which checks the framing the
// CRC cannot vouch for (a writer's bug, a bad compressed stream).
func (v *verifier) recordsOf(path string, pos int64, b record.Batch) {
	it := b.Records(&record.DecodeOptions{SkipCRC: true})
	defer it.Close()
	n := int64(0)
	for it.Next() {
		n++
	}
	v.records += n
	if err := it.Err(); err != nil {
		v.problem((&corruptError{Path: path, Pos: pos, Offset: b.BaseOffset(), Err: fmt.Errorf("records do not decode: %w", err)}).Error())
		return
	}
	if n != int64(b.NumRecords()) {
		v.problem((&corruptError{Path: path, Pos: pos, Offset: b.BaseOffset(), Err: fmt.Errorf("header counts %d records, the batch holds %d", b.NumRecords(), n)}).Error())
	}
}
