package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// partitionsPlan is the matrix of the partitions suite.
type partitionsPlan struct {
	Counts []int
	// RunBytes is what one run appends across all partitions together.
	RunBytes     int64
	BatchRecords int
	RecSize      int
	SegmentBytes int64
	// Workers append (then read) partitions in parallel, each owning
	// every Workers-th partition.
	Workers int
	// MaxOpenSegments is the shared cap on segments holding files, the
	// active ones included.
	MaxOpenSegments int
}

func partitionsPlanFor(cfg *config) partitionsPlan {
	p := partitionsPlan{
		Counts: []int{1, 8, 64, 1000}, BatchRecords: 16, RecSize: 1 << 10,
		SegmentBytes: 1 << 20, Workers: 2 * runtime.GOMAXPROCS(0), MaxOpenSegments: log.DefaultMaxOpenSegments,
	}
	// A smaller -scale also means fewer partitions: opening and closing a
	// thousand logs costs thousands of fsyncs whatever the data size.
	if cfg.Scale < 1 {
		var counts []int
		for _, c := range p.Counts {
			counts = append(counts, max(1, int(float64(c)*cfg.Scale)))
		}
		p.Counts = uniqueSorted(counts)
	}
	switch cfg.Mode {
	case modeQuick:
		p.RunBytes = cfg.scaled(4<<20, 1<<20)
		p.SegmentBytes = 256 << 10
	case modeFull:
		p.RunBytes = cfg.scaled(256<<20, 1<<20)
	default:
		p.RunBytes = cfg.scaled(32<<20, 1<<20)
	}
	return p
}

func runPartitions(ctx context.Context, e *env) ([]*table, error) {
	plan := partitionsPlanFor(e.cfg)
	t := &table{
		Suite:  suitePartitions,
		Title:  "aggregate append and read throughput by partition count, and what the logs hold open",
		Params: []string{"partitions"},
		Columns: []column{
			{"append", "MB/s"}, {"read", "MB/s"}, {"segments", "total"},
			{"open files", "fds"}, {"mappings", "map areas"}, {"sealed segments open", "of cap"},
		},
	}
	for _, n := range plan.Counts {
		if err := ctx.Err(); err != nil {
			return []*table{t}, err
		}
		e.step(suitePartitions, "%d partitions: opening", n)
		cols, cache, err := partitionsCase(ctx, e, plan, n)
		if err != nil {
			return []*table{t}, fmt.Errorf("%d partitions: %w", n, err)
		}
		if err := t.add([]string{strconv.Itoa(n)}, cache, cols); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Each run appends %s spread evenly over the partitions (%d-record batches of %s records, FlushNone, %d appending goroutines each owning every %d-th partition), then the same goroutines read back what the run appended with Log.Read (mmap read path), decoding every record. Logs stay open across runs; each run first deletes the records of the previous one (Log.DeleteRecordsBefore), so every run starts from one active segment per partition.", formatBytes(plan.RunBytes), plan.BatchRecords, formatBytes(int64(plan.RecSize)), plan.Workers, plan.Workers),
		fmt.Sprintf("Segments roll at %s. All logs share one log.ResourceCaps of %d segments, as a broker's would; active segments count against it too (an idle one is closed and reopens at its next append or read). Open files and mappings are counted from /proc/self after each run's reads: descriptors and map areas of files under the data directory (each active segment holds its .log, two index files and their mappings, plus the read mapping once read).", formatBytes(plan.SegmentBytes), plan.MaxOpenSegments),
	}
	return []*table{t}, nil
}

// partitionsCase opens n logs and runs the suite's runs over them.
func partitionsCase(ctx context.Context, e *env, plan partitionsPlan, n int) ([][]float64, string, error) {
	root, err := os.MkdirTemp(e.dir, "p"+strconv.Itoa(n)+"-")
	if err != nil {
		return nil, "", fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(root)
	caps := log.NewResourceCaps(plan.MaxOpenSegments)
	opts := &log.Options{
		FlushPolicy: log.FlushNone, SegmentBytes: plan.SegmentBytes, MaxBatchBytes: int(min(plan.SegmentBytes, 1<<20+12)),
		SegmentAge: -1, RetentionAge: -1, RetentionCheckInterval: -1, Caps: caps,
	}
	logs := make([]*log.Log, 0, n)
	closeAll := func() error {
		var errs []error
		for _, l := range logs {
			errs = append(errs, l.Close())
		}
		return errors.Join(errs...)
	}
	for i := range n {
		l, err := log.Open(vfs.Default, filepath.Join(root, "bench-"+strconv.Itoa(i)), opts, log.State{})
		if err != nil {
			return nil, "", errors.Join(fmt.Errorf("bench: open partition %d: %w", i, err), closeAll())
		}
		logs = append(logs, l)
	}
	batch, err := buildBatch(plan.BatchRecords, plan.RecSize, 11)
	if err != nil {
		return nil, "", errors.Join(err, closeAll())
	}
	perPart := max(1, int(plan.RunBytes/int64(n)/int64(len(batch))))
	cols := make([][]float64, 6)
	var res []float64
	for r := range e.cfg.Runs {
		if err := ctx.Err(); err != nil {
			return nil, "", errors.Join(err, closeAll())
		}
		e.step(suitePartitions, "%d partitions, run %d/%d: append", n, r+1, e.cfg.Runs)
		// Drop what earlier runs appended (Kafka's DeleteRecords), so that
		// every run starts from one active segment per partition and its
		// counts describe this run's data only.
		starts := make([]int64, n)
		for i, l := range logs {
			starts[i] = l.LogEndOffset()
			if _, err := l.DeleteRecordsBefore(starts[i]); err != nil {
				return nil, "", errors.Join(fmt.Errorf("bench: partition %d: %w", i, err), closeAll())
			}
		}
		appended := int64(n) * int64(perPart) * int64(len(batch))
		dt, err := forPartitions(plan.Workers, n, func(i int, b record.Batch) error {
			for range perPart {
				if _, _, err := logs[i].Append(b); err != nil {
					return err
				}
			}
			return nil
		}, batch)
		if err != nil {
			return nil, "", errors.Join(err, closeAll())
		}
		cols[0] = append(cols[0], mbps(appended, dt))

		e.step(suitePartitions, "%d partitions, run %d/%d: read", n, r+1, e.cfg.Runs)
		frac, err := dirResidency(root)
		if err != nil {
			return nil, "", errors.Join(err, closeAll())
		}
		res = append(res, frac)
		want := int64(perPart * plan.BatchRecords)
		dt, err = forPartitions(plan.Workers, n, func(i int, _ record.Batch) error {
			got, err := readRange(logs[i], starts[i], logs[i].LogEndOffset())
			if err == nil && got != want {
				err = fmt.Errorf("%w: partition %d: read %d records, appended %d", ErrMismatch, i, got, want)
			}
			return err
		}, nil)
		if err != nil {
			return nil, "", errors.Join(err, closeAll())
		}
		cols[1] = append(cols[1], mbps(appended, dt))
		segs := 0
		for _, l := range logs {
			segs += l.Stats().Segments
		}
		cols[2] = append(cols[2], float64(segs))
		fds, maps, err := heldResources(root)
		if err != nil {
			cols[3], cols[4] = append(cols[3], nan()), append(cols[4], nan())
		} else {
			cols[3], cols[4] = append(cols[3], float64(fds)), append(cols[4], float64(maps))
		}
		cols[5] = append(cols[5], float64(caps.Stats().OpenSegments))
	}
	if err := closeAll(); err != nil {
		return nil, "", fmt.Errorf("bench: close logs: %w", err)
	}
	if files, maps := readpath.Stats(); files != 0 || maps != 0 {
		return nil, "", fmt.Errorf("%w: %d files and %d mappings still open after every log closed", ErrMismatch, files, maps)
	}
	return cols, describeCache(warmCache, res), nil
}

// dirResidency is the resident fraction of every file below dir.
func dirResidency(dir string) (float64, error) {
	files, err := filesUnder(dir)
	if err != nil {
		return nan(), err
	}
	var logs []string
	for _, f := range files {
		if filepath.Ext(f) == ".log" {
			logs = append(logs, f)
		}
	}
	return residencyOf(logs)
}

// forPartitions runs fn for every partition on workers goroutines, each
// owning every workers-th partition, and returns the wall time. Each
// worker gets its own copy of batch (Append rewrites it in place).
func forPartitions(workers, n int, fn func(i int, b record.Batch) error, batch record.Batch) (time.Duration, error) {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b record.Batch
			if batch != nil {
				b = batch.Clone()
			}
			for i := w; i < n; i += workers {
				if err := fn(i, b); err != nil {
					errs[w] = fmt.Errorf("partition %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), errors.Join(errs...)
}

// readRange reads [from, to) of l as a consumer would and returns the
// number of records decoded.
func readRange(l *log.Log, from, to int64) (int64, error) {
	var records int64
	next := from
	for next < to {
		v, err := l.Read(next, 1<<20)
		if err != nil {
			return records, fmt.Errorf("read offset %d: %w", next, err)
		}
		b, err := v.Bytes()
		if err == nil {
			err = readpath.Guard(func() error {
				for len(b) > 0 {
					batch, rest, err := record.Parse(b)
					if err != nil {
						return err
					}
					it := batch.Records(skipCRC)
					for it.Next() {
						r := it.Record()
						if r.Offset() >= next && r.Offset() < to {
							touch(r.Value())
							records++
						}
					}
					err = it.Err()
					it.Close()
					if err != nil {
						return err
					}
					next = batch.LastOffset() + 1
					b = rest
				}
				return nil
			})
		}
		v.Release()
		if err != nil {
			return records, err
		}
	}
	return records, nil
}
