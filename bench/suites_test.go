package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

func TestBuildBatch(t *testing.T) {
	b, err := buildBatch(100, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.NumRecords() != 100 || b.LastOffsetDelta() != 99 {
		t.Fatalf("records %d, last delta %d", b.NumRecords(), b.LastOffsetDelta())
	}
	it := b.Records(nil)
	defer it.Close()
	for it.Next() {
		if r := it.Record(); len(r.Value()) != 100 || !r.KeyIsNull() {
			t.Fatalf("record %d: value %d bytes", r.Offset(), len(r.Value()))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	// The append suite appends one batch many times: the log rewrites the
	// base offset only, and the batch stays valid.
	b.SetBaseOffset(12345)
	if err := b.Validate(); err != nil {
		t.Fatalf("after a new base offset: %v", err)
	}
}

func TestAppendPolicyCadence(t *testing.T) {
	byName := map[string]policyCase{}
	for _, pc := range appendPolicies(modeDefault) {
		byName[pc.Name] = pc
	}
	for _, tt := range []struct {
		name  string
		n     int
		since time.Duration
		want  bool
	}{
		{"none", 1e9, time.Hour, false},
		{"sync", 1, 0, true},
		{"every(1000)", 999, time.Hour, false},
		{"every(1000)", 1000, 0, true},
		{"interval(10ms)", 1e9, 9 * time.Millisecond, false},
		{"interval(10ms)", 1, 10 * time.Millisecond, true},
	} {
		pc, ok := byName[tt.name]
		if !ok {
			t.Fatalf("no policy %q", tt.name)
		}
		if got := pc.syncs(tt.n, tt.since); got != tt.want {
			t.Errorf("%s after %d records, %v: fsync %v, want %v", tt.name, tt.n, tt.since, got, tt.want)
		}
	}
	if !byName["sync"].fsyncing || !byName["every(1000)"].fsyncing || byName["none"].fsyncing || byName["interval(10ms)"].fsyncing {
		t.Error("fsyncing flags are wrong")
	}
}

func TestPlainWriteRun(t *testing.T) {
	dir := t.TempDir()
	batch := make([]byte, 1000)
	if _, err := plainWriteRun(dir, batch, 50, 10, func(n int, _ time.Duration) bool { return n >= 100 }); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("plain file left behind: %v", left)
	}
	n, d, err := plainSyncLoop(dir, batch, 20*time.Millisecond)
	if err != nil || n < 1 || d < 20*time.Millisecond {
		t.Fatalf("plainSyncLoop: %d writes in %v, %v", n, d, err)
	}
}

func TestRecoveryHelpers(t *testing.T) {
	dir := t.TempDir()
	plan := recoveryPlan{Segments: 4, SegmentBytes: 64 << 10, BatchBytes: 8 << 10, RecSize: 512}
	opts := recoveryOptions(plan)
	opts.FlushPolicy = log.FlushNone
	st, err := buildRecoveryLog(dir, plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	path, base, err := lastSegment(dir)
	if err != nil {
		t.Fatal(err)
	}
	if base <= 0 || filepath.Dir(path) != dir {
		t.Fatalf("last segment %s base %d", path, base)
	}
	size, err := fileSize(path)
	if err != nil {
		t.Fatal(err)
	}
	// Tearing twice leaves one torn write, not two: the file is restored
	// to its whole batches first.
	for range 2 {
		if err := tearLastBatch(path, size); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := fileSize(path); got != size+tornBytes {
		t.Fatalf("torn file is %d bytes, want %d", got, size+tornBytes)
	}
	cases := recoveryCases(false)
	crash := cases[1]
	if crash.state(st, base).Clean || crash.state(st, base).RecoveryPoint != base || !crash.torn {
		t.Fatalf("crash case state %+v", crash.state(st, base))
	}
	l, err := log.Open(vfs.Default, dir, opts, crash.state(st, base))
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Recovery()
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep.BytesCut != tornBytes || rep.SegmentsScanned != 1 || end != st.RecoveryPoint {
		t.Fatalf("recovery %+v, end %d, want a %d-byte cut of one segment ending at %d", rep, end, tornBytes, st.RecoveryPoint)
	}
	if _, _, err := lastSegment(t.TempDir()); !errors.Is(err, ErrMismatch) {
		t.Fatalf("lastSegment of an empty dir: %v", err)
	}
}

func TestHeldResources(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, _, err := heldResources(t.TempDir()); err == nil {
			t.Fatal("heldResources claims to work without /proc")
		}
		return
	}
	dir := t.TempDir()
	fds0, maps0, err := heldResources(dir)
	if err != nil || fds0 != 0 || maps0 != 0 {
		t.Fatalf("empty dir holds %d fds %d maps, %v", fds0, maps0, err)
	}
	f, err := os.Create(filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := os.Create(filepath.Join(t.TempDir(), "y"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fds, _, err := heldResources(dir)
	if err != nil || fds != 1 {
		t.Fatalf("one open file under dir counts %d fds (%v)", fds, err)
	}
}

func TestForPartitions(t *testing.T) {
	seen := make([]int, 10)
	b := record.Batch(nil)
	_, err := forPartitions(3, 10, func(i int, _ record.Batch) error { seen[i]++; return nil }, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("partition %d visited %d times", i, n)
		}
	}
	boom := errors.New("boom")
	_, err = forPartitions(2, 4, func(i int, _ record.Batch) error {
		if i == 3 {
			return boom
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error lost: %v", err)
	}
}

func TestPlansScale(t *testing.T) {
	small := &config{Mode: modeQuick, Scale: 0.05, Runs: 1}
	if p := partitionsPlanFor(small); !slices.Equal(p.Counts, []int{1, 3, 50}) {
		t.Errorf("partition counts at scale 0.05: %v", p.Counts)
	}
	full := &config{Mode: modeFull, Scale: 1, Runs: 1}
	rp := readPathsPlanFor(full)
	if len(rp.FetchBytes) != 3 || len(rp.BatchBytes) != 2 || rp.Consumers[0] != 1 {
		t.Errorf("full read-paths matrix: %+v", rp)
	}
	if !slices.IsSorted(rp.Consumers) {
		t.Errorf("consumers not sorted: %v", rp.Consumers)
	}
	// Point reads scale with the data and keep their floors; the cold
	// runs read a prefix of the warm runs' offsets, so never more.
	for _, cfg := range []*config{small, full, {Mode: modeDefault, Scale: 1, Runs: 5}, {Mode: modeQuick, Scale: 0.001, Runs: 1}} {
		p := readPathsPlanFor(cfg)
		if p.ColdPointReads < 20 || p.ColdPointReads > p.PointReads {
			t.Errorf("%s ×%g: %d point reads warm, %d cold", cfg.Mode, cfg.Scale, p.PointReads, p.ColdPointReads)
		}
	}
	if p := readPathsPlanFor(&config{Mode: modeDefault, Scale: 1}); p.PointReads != 20_000 || p.ColdPointReads != 1_000 {
		t.Errorf("default point reads: %d warm, %d cold", p.PointReads, p.ColdPointReads)
	}
	def := &config{Mode: modeDefault, Scale: 1, Runs: 5}
	if lp := latencyPlanFor(def); len(lp.Rates) != 2 || len(lp.Policies) != 4 {
		t.Errorf("default latency plan: %+v", lp)
	}
}
