package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// recoveryPlan is the log the recovery suite reopens.
type recoveryPlan struct {
	Segments     int
	SegmentBytes int64
	BatchBytes   int
	RecSize      int
}

func recoveryPlanFor(cfg *config) recoveryPlan {
	p := recoveryPlan{BatchBytes: 16 << 10, RecSize: 1 << 10}
	switch cfg.Mode {
	case modeQuick:
		p.Segments, p.SegmentBytes = 50, cfg.scaled(64<<10, 32<<10)
	case modeFull:
		p.Segments, p.SegmentBytes = 1000, cfg.scaled(1<<20, 32<<10)
	default:
		p.Segments, p.SegmentBytes = 200, cfg.scaled(256<<10, 32<<10)
	}
	return p
}

// recoveryCase is one way of reopening the log.
type recoveryCase struct {
	shutdown string // "clean" or "crash"
	point    string // where the recovery point stands
	cache    cacheState
	// state derives the State handed to Open from the clean checkpoint and
	// the last segment's base offset; torn adds a torn write to the last
	// segment before each run.
	state func(clean log.State, lastBase int64) log.State
	torn  bool
}

func recoveryCases(coldOK bool) []recoveryCase {
	clean := func(st log.State, _ int64) log.State { return st }
	atLast := func(st log.State, last int64) log.State {
		st.Clean, st.RecoveryPoint = false, last
		return st
	}
	fromZero := func(st log.State, _ int64) log.State {
		st.Clean, st.RecoveryPoint = false, 0
		return st
	}
	cs := []recoveryCase{
		{"clean", "log end", warmCache, clean, false},
		{"crash, torn last batch", "start of last segment", warmCache, atLast, true},
		{"crash, torn last batch", "0 (no checkpoint)", warmCache, fromZero, true},
	}
	if coldOK {
		cs = append(cs,
			recoveryCase{"clean", "log end", coldCache, clean, false},
			recoveryCase{"crash, torn last batch", "0 (no checkpoint)", coldCache, fromZero, true},
		)
	}
	return cs
}

// tornBytes is what a crash leaves after the last whole batch in the
// recovery cases: the first part of a batch whose write was cut short.
const tornBytes = 200

func runRecovery(ctx context.Context, e *env) ([]*table, error) {
	plan := recoveryPlanFor(e.cfg)
	t := &table{
		Suite:  suiteRecovery,
		Title:  fmt.Sprintf("open time of a log of %d segments of %s", plan.Segments, formatBytes(plan.SegmentBytes)),
		Params: []string{"shutdown", "recovery point"},
		Columns: []column{
			{"open", "ms"}, {"segments scanned", ""}, {"scanned", "MB"}, {"scan rate", "MB/s"}, {"cut", "bytes"},
		},
	}
	dir := filepath.Join(e.dir, "log")
	e.step(suiteRecovery, "writing %d segments of %s", plan.Segments, formatBytes(plan.SegmentBytes))
	opts := recoveryOptions(plan)
	st, err := buildRecoveryLog(dir, plan, opts)
	if err != nil {
		return []*table{t}, err
	}
	lastLog, lastBase, err := lastSegment(dir)
	if err != nil {
		return []*table{t}, err
	}
	lastSize, err := fileSize(lastLog)
	if err != nil {
		return []*table{t}, err
	}
	files, err := filesUnder(dir)
	if err != nil {
		return []*table{t}, err
	}
	var total int64
	for _, f := range files {
		if strings.HasSuffix(f, segment.LogSuffix) {
			n, err := fileSize(f)
			if err != nil {
				return []*table{t}, err
			}
			total += n
		}
	}
	for _, c := range recoveryCases(coldSupported(e.dir)) {
		cols := make([][]float64, len(t.Columns))
		var res []float64
		for r := range e.cfg.Runs {
			if err := ctx.Err(); err != nil {
				return []*table{t}, err
			}
			e.step(suiteRecovery, "%s, recovery point %s, %s, run %d/%d", c.shutdown, c.point, c.cache, r+1, e.cfg.Runs)
			if c.torn {
				if err := tearLastBatch(lastLog, lastSize); err != nil {
					return []*table{t}, err
				}
			}
			files, err := filesUnder(dir)
			if err != nil {
				return []*table{t}, err
			}
			frac, err := prepareCache(c.cache, files)
			if err != nil {
				return []*table{t}, err
			}
			res = append(res, frac)
			t0 := time.Now()
			l, err := log.Open(vfs.Default, dir, opts, c.state(st, lastBase))
			dt := time.Since(t0)
			if err != nil {
				return []*table{t}, fmt.Errorf("open %s: %w", c.shutdown, err)
			}
			rep := l.Recovery()
			end := l.LogEndOffset()
			if err := l.Close(); err != nil {
				return []*table{t}, fmt.Errorf("close after %s open: %w", c.shutdown, err)
			}
			if end != st.RecoveryPoint {
				return []*table{t}, fmt.Errorf("%w: reopened log ends at %d, it was closed at %d", ErrMismatch, end, st.RecoveryPoint)
			}
			wantCut := int64(0)
			if c.torn {
				wantCut = tornBytes
			}
			if rep.BytesCut != wantCut {
				return []*table{t}, fmt.Errorf("%w: recovery cut %d bytes, the torn write was %d", ErrMismatch, rep.BytesCut, wantCut)
			}
			cols[0] = append(cols[0], float64(dt.Microseconds())/1e3)
			cols[1] = append(cols[1], float64(rep.SegmentsScanned))
			cols[2] = append(cols[2], float64(rep.BytesScanned)/1e6)
			rate := nan()
			if rep.BytesScanned > 0 {
				rate = mbps(rep.BytesScanned, dt)
			}
			cols[3] = append(cols[3], rate)
			cols[4] = append(cols[4], float64(rep.BytesCut))
		}
		if err := t.add([]string{c.shutdown, c.point}, describeCache(c.cache, res), cols); err != nil {
			return []*table{t}, err
		}
	}
	t.Notes = []string{
		fmt.Sprintf("The log holds %s in %d segments (%s batches of %s records), written under FlushNone and closed cleanly; every run reopens that directory with log.Open and closes it again. Only Open is timed.", formatBytes(total), plan.Segments, formatBytes(int64(plan.BatchBytes)), formatBytes(int64(plan.RecSize))),
		fmt.Sprintf("A crash is simulated the way the log sees one: the owner passes State{Clean: false} with the recovery point it last checkpointed, and the last segment ends in %d bytes of a batch whose write was cut off. Recovery must cut exactly those bytes and reopen at the same log end; a run that does not fails the suite.", tornBytes),
		"After a clean shutdown nothing is scanned: sealed segments are not even opened until read. The cache column covers every file of the log (.log and indexes).",
	}
	return []*table{t}, nil
}

func recoveryOptions(plan recoveryPlan) *log.Options {
	return &log.Options{
		FlushPolicy:            log.FlushNone,
		SegmentBytes:           plan.SegmentBytes,
		MaxBatchBytes:          int(min(plan.SegmentBytes, 1<<20+12)),
		SegmentAge:             -1,
		RetentionAge:           -1,
		RetentionCheckInterval: -1,
	}
}

// buildRecoveryLog appends batches until the log has plan.Segments
// segments, closes it and returns the clean checkpoint.
func buildRecoveryLog(dir string, plan recoveryPlan, opts *log.Options) (log.State, error) {
	l, err := log.Open(vfs.Default, dir, opts, log.State{})
	if err != nil {
		return log.State{}, fmt.Errorf("bench: open log: %w", err)
	}
	batch, err := buildBatch(max(1, plan.BatchBytes/(plan.RecSize+32)), plan.RecSize, 7)
	if err != nil {
		l.Close()
		return log.State{}, err
	}
	// The log rolls when an append would pass SegmentBytes, so each
	// segment takes perSeg batches and the last one is as full as the rest.
	perSeg := max(1, int(plan.SegmentBytes/int64(len(batch))))
	for range plan.Segments * perSeg {
		if _, _, err := l.Append(batch); err != nil {
			l.Close()
			return log.State{}, fmt.Errorf("bench: append: %w", err)
		}
	}
	if n := l.Stats().Segments; n != plan.Segments {
		l.Close()
		return log.State{}, fmt.Errorf("%w: %d appends of %d bytes made %d segments, expected %d", ErrMismatch, plan.Segments*perSeg, len(batch), n, plan.Segments)
	}
	if err := l.Close(); err != nil {
		return log.State{}, fmt.Errorf("bench: close log: %w", err)
	}
	st := l.Checkpoint()
	if !st.Clean {
		return st, fmt.Errorf("%w: a cleanly closed log reports an unclean checkpoint", ErrMismatch)
	}
	return st, nil
}

// lastSegment finds the .log file with the highest base offset.
func lastSegment(dir string) (path string, base int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, fmt.Errorf("bench: %w", err)
	}
	base = -1
	for _, e := range ents {
		b, suffix, ok := segment.ParseFileName(e.Name())
		if ok && suffix == segment.LogSuffix && b > base {
			base, path = b, filepath.Join(dir, e.Name())
		}
	}
	if base < 0 {
		return "", 0, fmt.Errorf("%w: no segment in %s", ErrMismatch, dir)
	}
	return path, base, nil
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	return st.Size(), nil
}

// tearLastBatch makes the segment file end in tornBytes of a batch cut off
// mid-write: the file is first restored to size (its whole batches; a
// previous recovery cut the last torn write), then the first tornBytes of
// its own first batch are appended, a header that promises more bytes than
// follow.
func tearLastBatch(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("bench: tear: %w", err)
	}
	defer f.Close()
	head := make([]byte, tornBytes)
	if _, err := f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("bench: tear: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("bench: tear: %w", err)
	}
	if _, err := f.WriteAt(head, size); err != nil {
		return fmt.Errorf("bench: tear: %w", err)
	}
	return nil
}
