package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// partView is one partition's directory, read without the Broker.
type partView struct {
	dir       string
	topic     string
	partition int32
	// ckptStart is the log start offset the checkpoint file holds, or -1.
	ckptStart int64
	maxBatch  int
}

func (d *dataDir) partView(in topic.Info, p int32) *partView {
	start, ok := d.starts[partKey{in.ID, p}]
	if !ok {
		start = -1
	}
	return &partView{
		dir:       d.partitionDir(in.Name, p),
		topic:     in.Name,
		partition: p,
		ckptStart: start,
		maxBatch:  max(int(in.Config.MaxMessageBytes), defaultMaxBatch),
	}
}

// bases lists the partition's segments; a missing directory is an error
// naming it.
func (pv *partView) bases() ([]int64, error) {
	bases, err := segmentBases(pv.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: directory %s does not exist (was the topic deleted?)", ErrUnknownPartition, pv.dir)
	}
	return bases, err
}

// partBounds are a partition's offsets and size as its files show them.
type partBounds struct {
	// Start is the first offset served: the first segment's base, or the
	// checkpointed log start offset if that is later.
	Start int64
	// End is the offset after the last complete valid batch: the log end
	// offset a reader can see. Under FlushSync a live Broker's consumers
	// may see less (its high watermark is the fsynced end).
	End      int64
	Segments int
	// Bytes is the size of the .log files.
	Bytes int64
}

// bounds reads the partition's offsets: the end comes from the last
// segment, scanned from its last offset-index entry.
func (pv *partView) bounds() (partBounds, error) {
	bases, err := pv.bases()
	if err != nil {
		return partBounds{}, err
	}
	var pb partBounds
	pb.Segments = len(bases)
	for _, b := range bases {
		fi, err := os.Stat(segment.LogPath(pv.dir, b))
		if err == nil {
			pb.Bytes += fi.Size()
		}
	}
	if len(bases) == 0 {
		pb.Start = max(pv.ckptStart, 0)
		pb.End = pb.Start
		return pb, nil
	}
	pb.Start = max(bases[0], pv.ckptStart)
	end, err := pv.segmentEnd(bases[len(bases)-1])
	if err != nil {
		return partBounds{}, err
	}
	pb.End = max(end, pb.Start)
	return pb, nil
}

// segmentEnd is the offset after the last complete valid batch of a
// segment, its base if it has none.
func (pv *partView) segmentEnd(base int64) (int64, error) {
	lf, err := openLogFile(segment.LogPath(pv.dir, base), base, pv.maxBatch)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	end := base
	if entries, err := readOffsetIndex(segment.IndexPath(pv.dir, base), base); err == nil && len(entries) > 0 {
		if e := entries[len(entries)-1]; seekChecked(lf, e) {
			end = e.Offset + 1
		}
	}
	for {
		b, _, err := lf.Next()
		if err != nil {
			// The end is the last complete valid batch, whatever follows it.
			return end, nil
		}
		end = b.LastOffset() + 1
	}
}

// seekChecked moves lf to the batch an index entry names if the log agrees
// with the entry (the batch there is valid and ends at the entry's offset),
// and reports whether it did; otherwise lf is back at position 0.
func seekChecked(lf *logFile, e offsetEntry) bool {
	lf.SeekTo(e.Pos)
	if b, _, err := lf.Next(); err == nil && b.LastOffset() == e.Offset {
		lf.SeekTo(e.Pos)
		return true
	}
	lf.SeekTo(0)
	return false
}

// partReader reads one partition's records in offset order, following the
// partition as a live Broker appends and rolls segments.
type partReader struct {
	pv    *partView
	bases []int64
	lf    *logFile // the current segment's log; nil before positionAt
	// next is the offset of the next record to hand out.
	next int64
	// atEnd is set while the reader has seen everything written so far.
	atEnd bool
}

// positionAt makes offset the next record to read. An offset below the
// partition's start is ErrOffsetDeleted.
func (pr *partReader) positionAt(offset int64) error {
	if pr.lf != nil {
		pr.lf.Close()
		pr.lf = nil
	}
	for attempt := 0; ; attempt++ {
		bases, err := pr.pv.bases()
		if err != nil {
			return err
		}
		pr.bases = bases
		if len(bases) == 0 {
			return fmt.Errorf("%w: partition directory %s holds no segment", ErrCorrupt, pr.pv.dir)
		}
		if offset < bases[0] || offset < pr.pv.ckptStart {
			return fmt.Errorf("%w: %s-%d: offset %d; the partition starts at %d", ErrOffsetDeleted,
				pr.pv.topic, pr.pv.partition, offset, max(bases[0], pr.pv.ckptStart))
		}
		i := sort.Search(len(bases), func(i int) bool { return bases[i] > offset }) - 1
		err = pr.open(bases[i], offset)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // retention deleted it since the listing: list again
		}
		if err != nil {
			return err
		}
		pr.next = offset
		return nil
	}
}

// open opens the segment with base offset base and moves to the batch
// holding offset, or the first one past it, using the offset index when it
// agrees with the log.
func (pr *partReader) open(base, offset int64) error {
	lf, err := openLogFile(segment.LogPath(pr.pv.dir, base), base, pr.pv.maxBatch)
	if err != nil {
		return err
	}
	if offset > base {
		if entries, err := readOffsetIndex(segment.IndexPath(pr.pv.dir, base), base); err == nil {
			// An entry names a batch's last offset, so the batch after the
			// entry at or below offset-1 is the first that can hold offset.
			if e, ok := lookupOffset(entries, offset-1); ok && seekChecked(lf, e) {
				if _, _, err := lf.Next(); err != nil {
					lf.SeekTo(0)
				}
			}
		}
	}
	pr.lf = lf
	return nil
}

// close releases the current segment.
func (pr *partReader) close() {
	if pr.lf != nil {
		pr.lf.Close()
		pr.lf = nil
	}
}

// poll hands batches holding records at or after the reader's position to
// visit, in order, until about maxBytes of batches were read, the end of
// what is written is reached (atEnd), or visit returns stop. visit gets
// each batch and the offset of its first record not yet handed out; it
// returns the offset after the last record it took (the new position) and
// whether to stop; its error means the batch's records do not decode.
// Damage in the partition is a *corruptError after the records before it
// were handed out.
func (pr *partReader) poll(maxBytes int, visit func(b record.Batch, from int64) (next int64, stop bool, err error)) error {
	read := 0
	rechecked := false
	for read < maxBytes {
		b, pos, err := pr.lf.NextRaw()
		if err == nil {
			rechecked = false
			pr.atEnd = false
			read += b.Size()
			if b.LastOffset() < pr.next {
				// Before the position (the index leads to the batch at or
				// before it): only its framing matters, as for a Kafka
				// fetch, so damage there does not stop a reader past it.
				pr.lf.prevLast = max(pr.lf.prevLast, b.LastOffset())
				continue
			}
			if err := pr.lf.check(b); err != nil {
				return &corruptError{Path: pr.lf.path, Pos: pos, Offset: b.BaseOffset(), Err: err}
			}
			if b.IsControl() {
				pr.next = b.LastOffset() + 1 // transaction markers are not records
				continue
			}
			next, stop, err := visit(b, pr.next)
			pr.next = next
			if err != nil {
				return &corruptError{Path: pr.lf.path, Pos: pos, Offset: b.BaseOffset(), Err: err}
			}
			if stop {
				return nil
			}
			continue
		}
		var torn *tornError
		if !errors.Is(err, io.EOF) && !errors.As(err, &torn) {
			return err
		}
		later, err := pr.laterSegment()
		if err != nil {
			return err
		}
		if later < 0 {
			pr.atEnd = true // the end of the last segment: a torn batch is a write in progress
			return nil
		}
		if !rechecked {
			// The writer may have appended to this segment between our read
			// and its roll; once a later segment exists this one is final.
			rechecked = true
			continue
		}
		if torn != nil {
			return &corruptError{Path: torn.Path, Pos: torn.Pos, Offset: -1,
				Err: fmt.Errorf("%w (%d bytes) in a segment that is not the last", errTorn, torn.Have)}
		}
		pr.lf.Close()
		pr.lf = nil
		if err := pr.open(later, pr.next); errors.Is(err, fs.ErrNotExist) {
			if err := pr.positionAt(pr.next); err != nil { // deleted meanwhile: find our place again
				return err
			}
		} else if err != nil {
			return err
		}
		rechecked = false
	}
	return nil
}

// laterSegment returns the base of the first segment after the current
// one, or -1 if the current one is the last.
//
// A live Broker rolls to a new segment at the log end, so the next segment
// is normally the one named after the reader's position: that name is
// tried first, which also spares a listing of a directory that may hold
// thousands of segments. Otherwise (an offset gap that compaction or a
// moved log start left, or the end of the log) the directory is listed. A
// listing that runs while files are created may miss some (POSIX leaves
// entries added during a readdir unspecified) and still show later ones,
// which would skip a segment; but every segment older than one a listing
// showed existed before that listing ended, so a second listing, started
// after it, shows them all. A segment that is not at the reader's position
// is therefore confirmed by a second listing before it is trusted.
func (pr *partReader) laterSegment() (int64, error) {
	cur := pr.lf.base
	if pr.next > cur {
		if _, err := os.Stat(segment.LogPath(pr.pv.dir, pr.next)); err == nil {
			return pr.next, nil
		}
	}
	later := int64(-1)
	for range 2 {
		bases, err := pr.pv.bases()
		if err != nil {
			return -1, err
		}
		pr.bases = bases
		i := sort.Search(len(bases), func(i int) bool { return bases[i] > cur })
		if i == len(bases) {
			return -1, nil
		}
		later = bases[i]
		if later == pr.next {
			break
		}
	}
	return later, nil
}
