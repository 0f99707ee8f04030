package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// Point reads are the read-paths suite's third table: one record at a
// random offset per read (a lookup by offset, a consumer that seeks about
// a topic kept as a store). Each read needs one batch, so the choice
// between the two in-process paths turns on other costs than a stream's:
// a page fault, and on a cold file the kernel's read-around, for mmap;
// a system call and a copy of exactly the batch for pread.

// pointRead is one read of a point-read run: the record's offset, the
// batch holding it, and touch() of its value, which the read must find.
type pointRead struct {
	Batch  int // index into the dataset's Batches
	Offset int64
	Want   uint64
}

// pointSeed fixes the offsets point reads draw, so that every run, path
// and cache state reads the same records in the same order.
const pointSeed = 0x706f696e74 // "point"

// pointReads draws n record offsets uniformly from the dataset and finds
// the batch holding each. What each read must find is worked out here,
// apart from the paths under test and from SkipBefore: the batch is read
// with ReadAt, checked whole (CRC included) and decoded record by record
// up to the offset.
func pointReads(ds *dataset, n int) ([]pointRead, error) {
	if ds.Records == 0 {
		return nil, fmt.Errorf("%w: point reads of an empty dataset", ErrMismatch)
	}
	f, err := os.Open(ds.Path)
	if err != nil {
		return nil, fmt.Errorf("bench: open dataset: %w", err)
	}
	defer f.Close()
	rng := newRand(pointSeed)
	out := make([]pointRead, n)
	var buf []byte
	for i := range out {
		off := rng.Int64N(ds.Records)
		bi := sort.Search(len(ds.Batches), func(j int) bool {
			return ds.Batches[j].BaseOffset+int64(ds.Batches[j].Records) > off
		})
		b := ds.Batches[bi]
		buf = slices.Grow(buf[:0], b.Size)[:b.Size]
		if _, err := f.ReadAt(buf, b.Pos); err != nil {
			return nil, fmt.Errorf("bench: read batch at %d: %w", b.Pos, err)
		}
		want, err := valueAt(buf, off)
		if err != nil {
			return nil, fmt.Errorf("batch at %d: %w", b.Pos, err)
		}
		out[i] = pointRead{Batch: bi, Offset: off, Want: want}
	}
	return out, nil
}

// valueAt is touch() of the value of the record at offset in batch b,
// found by decoding every record before it.
func valueAt(b []byte, offset int64) (uint64, error) {
	it := record.Batch(b).Records(nil)
	defer it.Close()
	for it.Next() {
		if r := it.Record(); r.Offset() == offset {
			return touch(r.Value()), nil
		}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	return 0, fmt.Errorf("%w: no record at offset %d", ErrMismatch, offset)
}

// pointPaths are the paths point reads compare: the two a topic's
// read.path chooses between for a reader in the process.
var pointPaths = []pathKind{pathMmapView, pathPread}

// runPointReads adds the point-read rows of one dataset (rec and batch
// name it): per cache state, each path's runs. n counts the suite's
// configurations for the progress line, out of total.
func runPointReads(ctx context.Context, e *env, t *table, ds *dataset, plan readPathsPlan, caches []cacheState, rec, batch string, n *int, total int) error {
	e.step(suiteReadPaths, "point reads: drawing %d offsets of %s records", plan.PointReads, rec)
	reads, err := pointReads(ds, plan.PointReads)
	if err != nil {
		return err
	}
	// One untimed run per path, so that the pooled pread buffer exists
	// before any timed run.
	for _, p := range pointPaths {
		if _, err := pointRun(ds, p, reads[:min(100, len(reads))], warmCache); err != nil {
			return fmt.Errorf("point reads, warm-up %s: %w", p, err)
		}
	}
	for _, c := range caches {
		rs := reads[:min(pointCount(plan, ds, c), len(reads))]
		params := []string{"", rec, batch, fmt.Sprint(len(rs))}
		for _, p := range pointPaths {
			*n++
			runs := make([]readRun, 0, e.cfg.Runs)
			for r := range e.cfg.Runs {
				if err := ctx.Err(); err != nil {
					return err
				}
				e.step(suiteReadPaths, "[%d/%d] point reads, %s, %s records, %s, run %d/%d", *n, total, p, rec, c, r+1, e.cfg.Runs)
				rr, err := pointRun(ds, p, rs, c)
				if err != nil {
					return fmt.Errorf("point reads, %s, %s records, %s: %w", p, rec, c, err)
				}
				runs = append(runs, rr)
			}
			params[0] = p.String()
			if err := addPointRow(t, params, c, runs); err != nil {
				return err
			}
		}
	}
	return nil
}

// pointRun is one run of point reads through path p by one reader. The
// Source is opened once for the run and kept across its reads, as a
// broker keeps a segment open: an mmap run maps once, so the first touch
// of each page is a fault inside the run, and later reads of that page
// take none.
func pointRun(ds *dataset, p pathKind, reads []pointRead, c cacheState) (readRun, error) {
	rr, err := measuredRun(ds, p, c, func(src readpath.Source) error {
		for i, r := range reads {
			got, err := readPoint(src, p, ds.Batches[r.Batch], r.Offset)
			if err == nil && got != r.Want {
				err = fmt.Errorf("%w: value sum %x, the file holds %x", ErrMismatch, got, r.Want)
			}
			if err != nil {
				return fmt.Errorf("point read %d, offset %d: %w", i, r.Offset, err)
			}
		}
		return nil
	})
	if err != nil {
		return rr, err
	}
	rr.Records = int64(len(reads))
	for _, r := range reads {
		rr.Bytes += int64(ds.Batches[r.Batch].Size)
	}
	return rr, nil
}

// readPoint reads the record at offset as Folio's consumer does a read
// that lands inside a batch: a view of the batch holding it, the batch
// checked whole by record.Parse (size and CRC-32C: Folio, like Kafka's
// check.crcs, checks every batch it reads), the records before the offset
// passed over without decoding (SkipBefore), and the record's value read.
// It returns touch() of that value.
func readPoint(src readpath.Source, p pathKind, b span, offset int64) (sum uint64, err error) {
	v, err := src.View(b.Pos, b.Size)
	if err != nil {
		return 0, err
	}
	defer v.Release()
	read := func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		bt, rest, err := record.Parse(buf)
		if err != nil {
			return fmt.Errorf("%w: batch at %d: %v", ErrMismatch, b.Pos, err)
		}
		if len(rest) != 0 {
			return fmt.Errorf("%w: batch at %d is %d bytes, the dataset says %d", ErrMismatch, b.Pos, len(bt), b.Size)
		}
		it := bt.Records(skipCRC) // Parse has just checked the CRC
		defer it.Close()
		it.SkipBefore(offset)
		if !it.Next() {
			return fmt.Errorf("%w: batch at %d ends before offset %d (%v)", ErrMismatch, b.Pos, offset, it.Err())
		}
		r := it.Record()
		if r.Offset() != offset {
			return fmt.Errorf("%w: batch at %d gives offset %d for %d", ErrMismatch, b.Pos, r.Offset(), offset)
		}
		sum = touch(r.Value())
		return nil
	}
	if p == pathMmapView {
		// As consumeAll: a mapped page faults if the file shrank under it.
		return sum, readpath.Guard(read)
	}
	return sum, read()
}

// newPointTable is the suite's table of point reads; its notes are added
// once the runs know the data.
func newPointTable() *table {
	return &table{
		Suite:  suiteReadPaths,
		Title:  "in-process point reads: the batch holding a random record",
		Params: []string{"path", "record", "batch", "reads per run"},
		Columns: []column{
			{"reads", "k/s"}, {"CPU", "µs/read"},
			{"minor faults", "per read"}, {"major faults", "per read"},
			{"disk read", "KiB/read"},
		},
	}
}

// pointCount is the reads of one point-read run of ds in cache state c.
// Cold runs make fewer: at most ColdPointReads, and at most a quarter of
// the dataset's batches, so that (with offsets drawn uniformly) most of
// a run's reads find their batch not yet read by an earlier read of the
// run, and so uncached with pread (mmap's read-around brings in more).
// -full's 1 MiB batches leave 512 batches in its 512 MiB file: without
// the bound, 5,000 cold reads would find nine in ten batches cached.
func pointCount(plan readPathsPlan, ds *dataset, c cacheState) int {
	if c == coldCache {
		return max(min(plan.ColdPointReads, len(ds.Batches)/4), 1)
	}
	return plan.PointReads
}

func addPointRow(t *table, params []string, c cacheState, runs []readRun) error {
	var res, rate, cpu, minflt, majflt, disk []float64
	for _, r := range runs {
		n := float64(r.Records)
		res = append(res, r.Resident)
		rate = append(rate, perSecond(r.Records, r.Elapsed)/1e3)
		cpu = append(cpu, float64(r.Sender.cpu().Nanoseconds())/1e3/n)
		minflt = append(minflt, float64(r.Sender.MinFlt)/n)
		majflt = append(majflt, float64(r.Sender.MajFlt)/n)
		disk = append(disk, float64(r.Sender.InBlock)*512/1024/n)
	}
	return t.add(params, describeCache(c, res), [][]float64{rate, cpu, minflt, majflt, disk})
}

// pointNotes say exactly what a point read does and what the columns
// count. readAhead is the data directory's read-ahead window in KiB, 0
// when unknown.
func pointNotes(plan readPathsPlan, readAhead int) []string {
	window := "the read-ahead window of the data directory's block device (its read_ahead_kb could not be read here)"
	if readAhead > 0 {
		window = fmt.Sprintf("the read-ahead window of the data directory's block device, read_ahead_kb = %d KiB here", readAhead)
	}
	return []string{
		fmt.Sprintf("Each run reads %d records (warm) or %d (cold; fewer where that is over a quarter of the file's batches, so that most cold reads find their batch not yet read: the reads per run column gives the count), one at a time, at offsets drawn uniformly over the whole %s segment file with a fixed seed: the same offsets in the same order for both paths and every run, the cold runs' being the first of the warm runs'. One reader.", plan.PointReads, plan.ColdPointReads, formatBytes(plan.DataBytes)),
		"A read does what Folio's consumer does for a read that lands inside a batch: a readpath View of exactly the batch holding the record (about the batch column's size), its Bytes (the mmap view's inside readpath.Guard), record.Parse over the batch (size and CRC-32C: Folio checks every batch it reads, as Kafka's check.crcs does), RecordIter.SkipBefore to pass the records before it without decoding them, every byte of its value touched, then Release. Each read's value is checked against one worked out before the runs by reading the batch with ReadAt and decoding it record by record.",
		"The Source is opened before each run and kept open across its reads, as a broker keeps a segment open: an mmap run maps the file once, so the warm mmap row includes the minor faults of first touching each page (later reads of a page take none), and pread reads into one pooled buffer class. CPU is getrusage(RUSAGE_SELF) across the reads with the garbage collector held off; faults and disk reads are per read.",
		"Disk read is what the process asked the block layer to read (getrusage's ru_inblock; Linux: read_bytes of /proc/self/io), read-ahead included. A page fault on a file mapping makes the kernel read a window around the page, up to " + window + ", where pread reads the pages it asks for (more only when the pages just before are cached and the kernel takes the read for a stream). Cold runs read fewer records than warm ones so that most still find their batch uncached; how much of the file one mmap fault brings in, and so how many later reads hit, depends on that window against the file's size.",
	}
}
