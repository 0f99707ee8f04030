package replica

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs/faultfs"
)

// simLog is the log as the simulator drives it: what Leader and Reconcile
// use, plus the simulator's own steps (a leader's and a follower's append,
// the periodic flush, a crash) and what its invariants read. memLog is the
// fast in-memory one; realLog is log.Log over a faultfs per replica.
type simLog interface {
	Log
	FollowerLog
	// appendLeader appends one record as the leader, stamped with its
	// epoch; the log says which epoch it stamped.
	appendLeader(value uint64) (entry, error)
	// read returns the records at [offset, end), as a fetch copies them.
	read(offset, end int64) ([]entry, error)
	// appendFollower appends records copied from the leader, keeping
	// their offsets and epochs.
	appendFollower(es []entry) error
	entryAt(offset int64) entry
	localHW() int64
	flush() error
	// crash loses what is not durable and restarts the log.
	crash() error
	// broken names an invariant the log saw broken (a cut below its high
	// watermark, a failed operation), "" if none.
	broken() string
}

// realLog is a log.Log on its own faultfs.FS: a crash is a power cut of
// that FS (every byte not synced is lost) and a reopen of the log, as a
// restarted broker does. The log runs FlushSync (every append durable at
// once) or FlushNone with the simulator's scheduled flushes calling Sync,
// no retention schedule, no age rolls and segments too large to roll, so
// the log's own goroutine has nothing to do and the run stays
// deterministic. entries mirrors what the log holds, so that the
// invariants read it cheaply after every event; it is checked against the
// log's own bytes at every reopen and by verify.
type realLog struct {
	fs      *faultfs.FS
	dir     string
	opts    log.Options
	l       *log.Log
	entries []entry
	cut     string
	err     string
	lost    int // records the crashes took back, all told
}

// newRealLog opens the log in dir/t-0; dir must exist (it is taken as
// durable, as a broker's data directory is).
func newRealLog(dir string, sync bool, now func() time.Time) (*realLog, error) {
	opts := log.Options{
		FlushPolicy:            log.FlushNone,
		SegmentBytes:           1 << 20,
		SegmentAge:             -1,
		RetentionAge:           -1,
		RetentionCheckInterval: -1,
		ExternalHighWatermark:  true,
		Now:                    now,
	}
	if sync {
		opts.FlushPolicy = log.FlushSync
	}
	r := &realLog{fs: faultfs.New(), dir: filepath.Join(dir, "t-0"), opts: opts}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *realLog) open() error {
	l, err := log.Open(r.fs, r.dir, &r.opts, log.State{})
	if err != nil {
		return fmt.Errorf("open %s: %w", r.dir, err)
	}
	r.l = l
	es, err := r.readLog(0, l.LogEndOffset())
	if err != nil {
		return err
	}
	r.entries = es
	return nil
}

func (r *realLog) close() error { return r.l.Close() }

func (r *realLog) LogEndOffset() int64 { return r.l.LogEndOffset() }

func (r *realLog) SetHighWatermark(o int64) error { return r.l.SetHighWatermark(o) }

func (r *realLog) LastEpoch() int32 { return r.l.LatestEpoch() }

func (r *realLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return r.l.EndOffsetForEpoch(epoch)
}

func (r *realLog) TruncateTo(o int64) error {
	if hw := r.l.HighWatermark(); o < hw && r.cut == "" {
		r.cut = fmt.Sprintf("truncated to %d below the local high watermark %d", o, hw)
	}
	if err := r.l.TruncateTo(o); err != nil {
		return err
	}
	r.entries = r.entries[:min(o, int64(len(r.entries)))]
	return r.checkEnd("truncate")
}

// SetLeaderEpoch is what NewLeader calls: the epoch joins the log's cache
// at its end, durably.
func (r *realLog) SetLeaderEpoch(epoch int32) {
	if err := r.l.SetLeaderEpoch(epoch); err != nil {
		r.fail("set leader epoch %d: %v", epoch, err)
	}
}

func (r *realLog) fail(format string, args ...any) {
	if r.err == "" {
		r.err = fmt.Sprintf(format, args...)
	}
}

func simBatch(e entry, base int64) (record.Batch, error) {
	b, err := record.NewBuilder(nil)
	if err != nil {
		return nil, err
	}
	b.BaseOffset, b.PartitionLeaderEpoch = base, e.epoch
	if err := b.Append(record.Record{Value: binary.BigEndian.AppendUint64(nil, e.value)}); err != nil {
		return nil, err
	}
	return b.Build(nil)
}

func (r *realLog) appendLeader(value uint64) (entry, error) {
	b, err := simBatch(entry{value: value}, 0)
	if err != nil {
		return entry{}, err
	}
	first, last, err := r.l.Append(b)
	if err != nil {
		return entry{}, err
	}
	if first != last || first != int64(len(r.entries)) {
		return entry{}, fmt.Errorf("append landed at [%d, %d], the log ended at %d", first, last, len(r.entries))
	}
	es, err := r.readLog(first, first+1)
	if err != nil {
		return entry{}, err
	}
	r.entries = append(r.entries, es[0])
	return es[0], nil
}

func (r *realLog) appendFollower(es []entry) error {
	if len(es) == 0 {
		return nil
	}
	bs := make([]record.Batch, len(es))
	for i, e := range es {
		b, err := simBatch(e, int64(len(r.entries)+i))
		if err != nil {
			return err
		}
		bs[i] = b
	}
	if _, _, err := r.l.AppendFollower(bs...); err != nil {
		return err
	}
	r.entries = append(r.entries, es...)
	return r.checkEnd("follower append")
}

// read serves a follower's fetch from the log's bytes, not the mirror.
func (r *realLog) read(offset, end int64) ([]entry, error) { return r.readLog(offset, end) }

// readLog decodes the records at [offset, end) from the log, to its end
// (not the high watermark), as a follower's fetch reads.
func (r *realLog) readLog(offset, end int64) ([]entry, error) {
	var es []entry
	for o := offset; o < end; {
		v, err := r.l.ReadBounded(o, 1<<20, log.BoundLogEnd)
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", r.dir, o, err)
		}
		buf, err := v.Bytes()
		if err != nil {
			v.Release()
			return nil, err
		}
		start := o
		for len(buf) > 0 && o < end {
			b, rest, err := record.Parse(buf)
			if err != nil {
				v.Release()
				return nil, fmt.Errorf("parse %s at %d: %w", r.dir, o, err)
			}
			it := b.Records(nil)
			for rec, err := range it.All() {
				if err != nil {
					v.Release()
					return nil, err
				}
				if rec.Offset() >= o && rec.Offset() < end {
					if rec.Offset() != o || len(rec.Value()) != 8 {
						v.Release()
						return nil, fmt.Errorf("%s: record at %d where %d was due", r.dir, rec.Offset(), o)
					}
					es = append(es, entry{epoch: b.PartitionLeaderEpoch(), value: binary.BigEndian.Uint64(rec.Value())})
					o++
				}
			}
			buf = rest
		}
		v.Release()
		if o == start {
			return nil, fmt.Errorf("read %s at %d: no progress", r.dir, o)
		}
	}
	return es, nil
}

func (r *realLog) checkEnd(what string) error {
	if end := r.l.LogEndOffset(); end != int64(len(r.entries)) {
		return fmt.Errorf("%s: log end %d, %d records written", what, end, len(r.entries))
	}
	return nil
}

func (r *realLog) entryAt(o int64) entry { return r.entries[o] }

func (r *realLog) localHW() int64 { return r.l.HighWatermark() }

func (r *realLog) flush() error { return r.l.Sync() }

func (r *realLog) crash() error {
	durable := r.l.DurableEndOffset()
	if err := r.fs.PowerCut(); err != nil {
		return err
	}
	if err := r.l.Close(); err != nil && !errors.Is(err, faultfs.ErrPowerCut) {
		return fmt.Errorf("close after the cut: %w", err)
	}
	before := r.entries
	if err := r.open(); err != nil {
		return err
	}
	r.lost += len(before) - len(r.entries)
	// What survives is what was synced, no less; the mirror's records
	// and the log's agree on it.
	if n := int64(len(r.entries)); n < durable || n > int64(len(before)) || !slices.Equal(r.entries, before[:n]) {
		return fmt.Errorf("%s reopened with %d records, %d were durable of %d", r.dir, n, durable, len(before))
	}
	return nil
}

func (r *realLog) broken() string {
	if r.cut != "" {
		return r.cut
	}
	return r.err
}

// verify reads the whole log back and compares it with what was written.
func (r *realLog) verify() error {
	es, err := r.readLog(0, r.l.LogEndOffset())
	if err != nil {
		return err
	}
	if !slices.Equal(es, r.entries) {
		return fmt.Errorf("%s holds %d records that differ from the %d written", r.dir, len(es), len(r.entries))
	}
	return nil
}

var _ simLog = (*realLog)(nil)
var _ simLog = (*memLog)(nil)

// memLog's side of simLog.

func (l *memLog) appendLeader(value uint64) (entry, error) {
	e := entry{epoch: l.LastEpoch(), value: value}
	l.append(e)
	return e, nil
}

func (l *memLog) read(offset, end int64) ([]entry, error) {
	return slices.Clone(l.entries[offset:end]), nil
}

func (l *memLog) appendFollower(es []entry) error {
	l.append(es...)
	return nil
}

func (l *memLog) entryAt(o int64) entry { return l.entries[o] }
func (l *memLog) localHW() int64        { return l.hw }
func (l *memLog) broken() string        { return l.cutBelowHW }

func (l *memLog) flush() error {
	l.durable = l.LogEndOffset()
	return nil
}

func (l *memLog) crash() error {
	l.entries = l.entries[:l.durable]
	l.epochs = slices.DeleteFunc(l.epochs, func(e epochStart) bool { return e.start > l.durable })
	l.hw = 0
	return nil
}

var flagRealSeeds = flag.Int("sim.reallog", 50, "how many simulator seeds TestSimulatorRealLog runs on the real log over faultfs (-short: at most 10)")

// newRealSim is a simulator whose replicas keep a real log.Log each, on
// its own faultfs under t's temporary directory.
func newRealSim(t *testing.T, seed uint64, record bool) *sim {
	t.Helper()
	var logs []*realLog
	s, err := newSimOn(seed, record, func(id int32, sync bool, now func() time.Time) (simLog, error) {
		l, err := newRealLog(t.TempDir(), sync, now)
		if err != nil {
			return nil, err
		}
		logs = append(logs, l)
		return l, nil
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Cleanup(func() {
		for _, l := range logs {
			_ = l.close()
		}
	})
	return s
}

// lostToCrashes is how many records s's crashes took back.
func lostToCrashes(s *sim) int {
	n := 0
	for _, nd := range s.nodes {
		n += nd.log.(*realLog).lost
	}
	return n
}

// verifyReal reads every replica's log back after a run and compares it
// with what the simulator wrote and its invariants read.
func verifyReal(s *sim) error {
	for _, n := range s.nodes {
		if err := n.log.(*realLog).verify(); err != nil {
			return fmt.Errorf("replica %d: %w", n.id, err)
		}
	}
	return nil
}

// TestSimulatorRealLog is TestSimulator on the real log: each replica a
// log.Log over its own faultfs, a crash a power cut of that FS (the
// unsynced bytes lost) and a reopen, with the log's follower append,
// leader-epoch cache, EndOffsetForEpoch and TruncateTo doing what memLog
// stands in for. -sim.reallog sets the seed count; -seed=N replays one
// seed here too, with its trace.
func TestSimulatorRealLog(t *testing.T) {
	if *flagSeed != 0 {
		s := newRealSim(t, *flagSeed, true)
		err := s.run(3 * time.Second)
		if err == nil {
			err = verifyReal(s)
		}
		if err != nil {
			t.Fatalf("seed %d: %v\ntrace:\n%s", *flagSeed, err, strings.Join(s.trace, "\n"))
		}
		t.Logf("seed %d: %s", *flagSeed, s.summary())
		return
	}
	n := *flagRealSeeds
	if testing.Short() {
		n = min(n, 10)
	}
	var acked, events, crashes, lost int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s := newRealSim(t, seed, false)
		err := s.run(3 * time.Second)
		if err == nil {
			err = verifyReal(s)
		}
		if err != nil {
			t.Fatalf("seed %d on the real log: %v (replay: go test -run 'TestSimulatorRealLog$' ./replica -seed=%d)", seed, err, seed)
		}
		acked += len(s.acked)
		events += s.events
		crashes += s.crashes
		lost += lostToCrashes(s)
	}
	// The power cuts must take unsynced records back, or the lossy
	// setting tests nothing of the fault file layer.
	if acked == 0 || crashes == 0 || lost == 0 {
		t.Fatalf("%d acks=all records acknowledged, %d crashes, %d records lost to them: the simulator tests nothing", acked, crashes, lost)
	}
	t.Logf("%d seeds on the real log, %d events, %d crashes taking back %d unsynced records, %d acks=all records acknowledged", n, events, crashes, lost, acked)
}

// TestSimulatorRealLogFindsLastReplicaStanding is
// TestSimulatorFindsLastReplicaStanding on the real log: with lossy
// crashes unbounded, the power cuts of the fault file layer lose an
// acks=all record within a few seeds.
func TestSimulatorRealLogFindsLastReplicaStanding(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		s := newRealSim(t, seed, false)
		if !s.lossy {
			continue
		}
		s.unsafeCrashes = true
		if err := s.run(3 * time.Second); err != nil {
			if msg := err.Error(); !strings.Contains(msg, "acknowledged record") && !strings.Contains(msg, "below the local high watermark") {
				t.Fatalf("seed %d: %v, want committed records lost", seed, err)
			}
			t.Logf("seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("no seed lost a committed record to unbounded lossy crashes on the real log")
}

// TestSimulatorRealLogReplays: a seed run twice on the real log gives the
// same history: nothing of the log races the scheduler.
func TestSimulatorRealLogReplays(t *testing.T) {
	// The first seed of each setting (FlushSync, lossy FlushNone) that
	// crashes a replica.
	var seeds []uint64
	for _, lossy := range []bool{false, true} {
		for seed := uint64(1); ; seed++ {
			if s := newSim(seed, false); s.lossy == lossy {
				if s.run(time.Second) == nil && s.crashes > 0 {
					seeds = append(seeds, seed)
					break
				}
			}
		}
	}
	for _, seed := range seeds {
		a, b := newRealSim(t, seed, true), newRealSim(t, seed, true)
		if err := a.run(time.Second); err != nil {
			t.Fatal(err)
		}
		if err := b.run(time.Second); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.trace, b.trace) || len(a.trace) == 0 || a.crashes == 0 {
			t.Fatalf("seed %d replayed differently on the real log: %d and %d events, %d crashes", seed, len(a.trace), len(b.trace), a.crashes)
		}
		t.Logf("seed %d: %s", seed, a.summary())
	}
}
