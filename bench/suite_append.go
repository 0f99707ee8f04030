package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// appendPlan is the matrix of the append suite.
type appendPlan struct {
	// CacheBytes is what one run appends under the policies that do not
	// fsync on the append path; SyncBytes under those that do.
	CacheBytes, SyncBytes int64
	RecordSizes           []int
	// BatchRecords is the records per Append: a producer's batch.
	BatchRecords int
	Policies     []policyCase
	// Producers are the FlushSync concurrency levels, each appending
	// one-record batches for Window.
	Producers []int
	Window    time.Duration
}

// policyCase is a flush policy and the fsync cadence a plain file gets
// beside it, so that the ratio compares like with like.
type policyCase struct {
	Name   string
	Policy log.FlushPolicy
	// syncs reports whether the plain writer fsyncs after a write, given
	// the records written since its last fsync and the time since then.
	syncs func(records int, since time.Duration) bool
	// fsyncing marks the policies whose appends wait for fsyncs.
	fsyncing bool
}

const (
	flushIntervalCase = 10 * time.Millisecond
	flushEveryNCase   = 1000
)

func appendPolicies(mode string) []policyCase {
	none := policyCase{Name: "none", Policy: log.FlushNone, syncs: func(int, time.Duration) bool { return false }}
	interval := policyCase{Name: "interval(" + flushIntervalCase.String() + ")", Policy: log.FlushInterval(flushIntervalCase),
		syncs: func(_ int, since time.Duration) bool { return since >= flushIntervalCase }}
	everyN := policyCase{Name: "every(" + strconv.Itoa(flushEveryNCase) + ")", Policy: log.FlushEveryN(flushEveryNCase),
		syncs: func(n int, _ time.Duration) bool { return n >= flushEveryNCase }, fsyncing: true}
	syncAll := policyCase{Name: "sync", Policy: log.FlushSync, syncs: func(int, time.Duration) bool { return true }, fsyncing: true}
	return []policyCase{none, interval, everyN, syncAll}
}

func appendPlanFor(cfg *config) appendPlan {
	p := appendPlan{RecordSizes: []int{100, 1 << 10}, BatchRecords: 100, Policies: appendPolicies(cfg.Mode), Producers: []int{1, 8, 64}}
	switch cfg.Mode {
	case modeQuick:
		p.CacheBytes, p.SyncBytes = cfg.scaled(4<<20, 64<<10), cfg.scaled(1<<20, 64<<10)
		p.Window = time.Duration(float64(100*time.Millisecond) * min(cfg.Scale, 1))
	case modeFull:
		p.CacheBytes, p.SyncBytes = cfg.scaled(256<<20, 64<<10), cfg.scaled(64<<20, 64<<10)
		p.Window = time.Second
	default:
		p.CacheBytes, p.SyncBytes = cfg.scaled(32<<20, 64<<10), cfg.scaled(8<<20, 64<<10)
		p.Window = 300 * time.Millisecond
	}
	p.Window = max(p.Window, 20*time.Millisecond)
	return p
}

// appendLogOptions keeps the log from doing anything but appending during
// a run: no roll by age, no retention pass.
func appendLogOptions(policy log.FlushPolicy) *log.Options {
	return &log.Options{FlushPolicy: policy, SegmentAge: -1, RetentionAge: -1, RetentionCheckInterval: -1}
}

// buildBatch encodes n records of recSize random value bytes (null keys)
// into one batch. Appending it many times appends the same bytes: the log
// rewrites only the base offset, which lies outside the CRC.
func buildBatch(n, recSize int, seed uint64) (record.Batch, error) {
	b, err := record.NewBuilder(nil)
	if err != nil {
		return nil, err
	}
	rng := newRand(seed)
	v := make([]byte, recSize)
	for i := range n {
		fillRandom(rng, v)
		if err := b.Append(record.Record{Value: v, Timestamp: 1_700_000_000_000 + int64(i)}); err != nil {
			return nil, err
		}
	}
	return b.Build(nil)
}

func runAppend(ctx context.Context, e *env) ([]*table, error) {
	plan := appendPlanFor(e.cfg)
	const cache = "writes to new files (page cache)"
	pol := &table{
		Suite:  suiteAppend,
		Title:  "append throughput per flush policy, beside a plain file write of the same bytes",
		Params: []string{"flush policy", "record", "records per append"},
		Columns: []column{
			{"log", "records/s"}, {"log", "MB/s"}, {"plain file", "MB/s"}, {"log / plain", "ratio"}, {"log fsyncs", "per run"},
		},
	}
	conc := &table{
		Suite:  suiteAppend,
		Title:  "FlushSync with concurrent producers (group commit), beside a plain write-plus-fsync loop",
		Params: []string{"producers", "record", "records per append"},
		Columns: []column{
			{"log", "records/s"}, {"speed-up over 1 producer", "×"}, {"log fsyncs", "per 1000 records"},
			{"plain write+fsync", "records/s"}, {"log / plain", "ratio"},
		},
	}
	tables := []*table{pol, conc}
	for _, pc := range plan.Policies {
		for _, rs := range plan.RecordSizes {
			batch, err := buildBatch(plan.BatchRecords, rs, uint64(rs))
			if err != nil {
				return tables, err
			}
			total := plan.CacheBytes
			if pc.fsyncing {
				total = plan.SyncBytes
			}
			count := int(max(1, total/int64(len(batch))))
			var recs, logMB, plainMB, ratio, syncs []float64
			for r := range e.cfg.Runs {
				if err := ctx.Err(); err != nil {
					return tables, err
				}
				e.step(suiteAppend, "policy %s, %s records, run %d/%d", pc.Name, formatBytes(int64(rs)), r+1, e.cfg.Runs)
				var lr appendResult
				var pd time.Duration
				// Alternate which goes first so neither always gets the
				// fresher disk and emptier page cache.
				first, second := func() error {
					var err error
					lr, err = appendLogRun(e.dir, pc.Policy, batch, count)
					return err
				}, func() error {
					var err error
					pd, err = plainWriteRun(e.dir, batch, count, plan.BatchRecords, pc.syncs)
					return err
				}
				if r%2 == 1 {
					first, second = second, first
				}
				if err := errors.Join(first(), second()); err != nil {
					return tables, fmt.Errorf("policy %s, %s records: %w", pc.Name, formatBytes(int64(rs)), err)
				}
				bytes := int64(count) * int64(len(batch))
				recs = append(recs, perSecond(int64(count*plan.BatchRecords), lr.elapsed))
				logMB = append(logMB, mbps(bytes, lr.elapsed))
				plainMB = append(plainMB, mbps(bytes, pd))
				ratio = append(ratio, pd.Seconds()/lr.elapsed.Seconds())
				syncs = append(syncs, float64(lr.syncs))
			}
			if err := pol.add([]string{pc.Name, formatBytes(int64(rs)), strconv.Itoa(plan.BatchRecords)}, cache,
				[][]float64{recs, logMB, plainMB, ratio, syncs}); err != nil {
				return tables, err
			}
		}
	}
	pol.Notes = []string{
		fmt.Sprintf("One producer appends the same pre-built batch of %d records (null keys, random values) to a new log until %s (page-cache policies) or %s (fsyncing policies) are written; the log assigns offsets. Only the Append calls are timed, not Open or Close.", plan.BatchRecords, formatBytes(plan.CacheBytes), formatBytes(plan.SyncBytes)),
		fmt.Sprintf("The plain file gets the same bytes with write(2) in the same run, fsynced on the policy's cadence: never (none), when %v have passed since the last fsync (interval), every %d records (every), after every write (sync). The ratio is log MB/s over plain MB/s, per run; above 1 the log was faster.", flushIntervalCase, flushEveryNCase),
		"Under interval the log fsyncs in the background while the plain writer fsyncs inline; under none neither fsyncs, so both measure writes into the page cache.",
	}

	one, err := buildBatch(1, 100, 1)
	if err != nil {
		return tables, err
	}
	rows := map[int][][]float64{}
	for r := range e.cfg.Runs {
		if err := ctx.Err(); err != nil {
			return tables, err
		}
		e.step(suiteAppend, "plain write+fsync loop, run %d/%d", r+1, e.cfg.Runs)
		plainN, plainD, err := plainSyncLoop(e.dir, one, plan.Window)
		if err != nil {
			return tables, err
		}
		plainRate := perSecond(plainN, plainD)
		var base float64
		for _, p := range plan.Producers {
			e.step(suiteAppend, "FlushSync, %d producer(s), run %d/%d", p, r+1, e.cfg.Runs)
			res, err := concurrentSyncRun(e.dir, one, p, plan.Window)
			if err != nil {
				return tables, fmt.Errorf("FlushSync with %d producers: %w", p, err)
			}
			rate := perSecond(res.records, res.elapsed)
			if p == plan.Producers[0] {
				base = rate
			}
			if rows[p] == nil {
				rows[p] = make([][]float64, 5)
			}
			rows[p][0] = append(rows[p][0], rate)
			rows[p][1] = append(rows[p][1], rate/base)
			rows[p][2] = append(rows[p][2], 1000*float64(res.syncs)/float64(res.records))
			rows[p][3] = append(rows[p][3], plainRate)
			rows[p][4] = append(rows[p][4], rate/plainRate)
		}
	}
	for _, p := range plan.Producers {
		if err := conc.add([]string{strconv.Itoa(p), "100 B", "1"}, cache, rows[p]); err != nil {
			return tables, err
		}
	}
	conc.Notes = []string{
		fmt.Sprintf("Each producer appends one-record batches under FlushSync for %v; an Append returns after an fsync covers it, and concurrent appenders share fsyncs. The speed-up is against the %d-producer figure of the same run.", plan.Window, plan.Producers[0]),
		fmt.Sprintf("The plain loop is one writer doing write(2) of the same batch then fsync, for %v: the cost of a durable append without group commit.", plan.Window),
	}
	return tables, nil
}

type appendResult struct {
	elapsed time.Duration
	syncs   int64 // fsyncs the log made during the timed appends
	records int64
}

// newAppendLog opens a new log in a fresh directory under dir.
func newAppendLog(dir string, policy log.FlushPolicy) (*log.Log, string, error) {
	d, err := os.MkdirTemp(dir, "log-")
	if err != nil {
		return nil, "", fmt.Errorf("bench: %w", err)
	}
	l, err := log.Open(vfs.Default, d, appendLogOptions(policy), log.State{})
	if err != nil {
		os.RemoveAll(d)
		return nil, "", fmt.Errorf("bench: open log: %w", err)
	}
	return l, d, nil
}

// appendLogRun appends batch count times to a new log.
func appendLogRun(dir string, policy log.FlushPolicy, batch record.Batch, count int) (appendResult, error) {
	var res appendResult
	l, d, err := newAppendLog(dir, policy)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(d)
	s0 := l.Stats().Syncs
	t0 := time.Now()
	for i := 0; i < count && err == nil; i++ {
		_, _, err = l.Append(batch)
	}
	res.elapsed = time.Since(t0)
	res.syncs = l.Stats().Syncs - s0
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("bench: append: %w", err)
	}
	return res, nil
}

// plainWriteRun writes batch count times to a new file with write(2),
// fsyncing when syncs says so; it is the baseline of one policy row.
func plainWriteRun(dir string, batch []byte, count, recsPerBatch int, syncs func(int, time.Duration) bool) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "plain-")
	if err != nil {
		return 0, fmt.Errorf("bench: plain file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	unsynced := 0
	t0 := time.Now()
	lastSync := t0
	for range count {
		if _, err := f.Write(batch); err != nil {
			return 0, fmt.Errorf("bench: plain write: %w", err)
		}
		unsynced += recsPerBatch
		if now := time.Now(); syncs(unsynced, now.Sub(lastSync)) {
			if err := f.Sync(); err != nil {
				return 0, fmt.Errorf("bench: plain fsync: %w", err)
			}
			unsynced, lastSync = 0, time.Now()
		}
	}
	return time.Since(t0), nil
}

// plainSyncLoop writes and fsyncs batch in a loop for window.
func plainSyncLoop(dir string, batch []byte, window time.Duration) (int64, time.Duration, error) {
	f, err := os.CreateTemp(dir, "plain-")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: plain file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var n int64
	t0 := time.Now()
	for time.Since(t0) < window {
		if _, err := f.Write(batch); err != nil {
			return 0, 0, fmt.Errorf("bench: plain write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, 0, fmt.Errorf("bench: plain fsync: %w", err)
		}
		n++
	}
	return n, time.Since(t0), nil
}

// concurrentSyncRun runs producers goroutines appending copies of batch
// under FlushSync until window has passed.
func concurrentSyncRun(dir string, batch record.Batch, producers int, window time.Duration) (appendResult, error) {
	var res appendResult
	l, d, err := newAppendLog(dir, log.FlushSync)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(d)
	var count atomic.Int64
	errs := make([]error, producers)
	s0 := l.Stats().Syncs
	t0 := time.Now()
	deadline := t0.Add(window)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Append rewrites the batch's base offset in place: each
			// producer needs its own copy.
			b := batch.Clone()
			for time.Now().Before(deadline) {
				if _, _, err := l.Append(b); err != nil {
					errs[i] = err
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(t0)
	res.syncs = l.Stats().Syncs - s0
	res.records = count.Load()
	cerr := l.Close()
	if err := errors.Join(append(errs, cerr)...); err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	if res.records == 0 {
		return res, fmt.Errorf("bench: no append completed in %v", window)
	}
	return res, nil
}
