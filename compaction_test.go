package folio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// testClock is a Broker clock a test moves by hand (tombstone retention and
// segment age read it).
type testClock struct{ ns atomic.Int64 }

func newTestClock(start time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(start.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// logRec is one record as a partition's log holds it.
type logRec struct {
	offset     int64
	key, value []byte // value nil: a tombstone
}

// logRecords reads every visible record of l straight from its batches,
// skipping the gaps and empty batches compaction leaves.
func logRecords(t testing.TB, l *log.Log) []logRec {
	t.Helper()
	var out []logRec
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		v, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("%s: Read(%d): %v", l.Dir(), off, err)
		}
		from := off
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				b, rest, err := record.Parse(buf)
				if err != nil {
					return err
				}
				buf = rest
				if b.LastOffset() < from {
					continue
				}
				it := b.Records(nil)
				for it.Next() {
					r := it.Record()
					if r.Offset() < from {
						continue
					}
					rec := logRec{offset: r.Offset(), key: bytes.Clone(r.Key())}
					if !r.ValueIsNull() {
						rec.value = append([]byte{}, r.Value()...)
					}
					out = append(out, rec)
				}
				ierr := it.Err()
				it.Close()
				if ierr != nil {
					return ierr
				}
				off = b.LastOffset() + 1
			}
			return nil
		})
		v.Release()
		if err != nil {
			t.Fatalf("%s: reading at %d: %v", l.Dir(), from, err)
		}
		if off <= from {
			t.Fatalf("%s: a read at %d made no progress", l.Dir(), from)
		}
	}
	return out
}

// TestPartitionOptionsShareTheCleaner: every partition of a writable
// Broker gets the Broker's one cleaner and caps (the mapping of a topic's
// compaction settings onto its log is the partition package's, tested
// there); a read-only Broker has no cleaner and opens its partitions
// read-only.
func TestPartitionOptionsShareTheCleaner(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	if b.cleaner == nil {
		t.Fatal("a writable Broker has no cleaner")
	}
	in := topic.Info{Name: "t", Config: TopicConfig{Cleanup: topic.CleanupCompact}}
	if o := b.partitionOptions(in, 0); o.Cleaner != b.cleaner || o.Caps != b.caps || o.ReadOnly {
		t.Fatalf("partition options: cleaner %p (the Broker's %p), caps %p (%p), read-only %v", o.Cleaner, b.cleaner, o.Caps, b.caps, o.ReadOnly)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	rb, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if rb.cleaner != nil {
		t.Fatal("a read-only Broker made a cleaner")
	}
	if o := rb.partitionOptions(in, 0); o.Cleaner != nil || !o.ReadOnly {
		t.Fatalf("read-only options: cleaner %p, read-only %v", o.Cleaner, o.ReadOnly)
	}
	if st := rb.Stats(); st.Cleaner != (log.CleanerStats{}) {
		t.Fatalf("read-only Broker reports cleaner stats %+v", st.Cleaner)
	}
}

// TestBrokerSharesOneCleaner: every compacted partition registers with the
// Broker's one cleaner (a private cleaner per log would not count there),
// a deleted topic leaves it, and Close stops it after the logs.
func TestBrokerSharesOneCleaner(t *testing.T) {
	b := openT(t, t.TempDir(), &Options{Cleaner: &log.CleanerOptions{Workers: 2, BufferBytes: 1 << 20}})
	createTopicT(t, b, "users", TopicConfig{Partitions: 3, Cleanup: topic.CleanupCompact})
	createTopicT(t, b, "accounts", TopicConfig{Partitions: 2, Cleanup: topic.CleanupCompactDelete})
	createTopicT(t, b, "events", TopicConfig{Partitions: 4})
	if n := b.Stats().Cleaner.Logs; n != 5 {
		t.Fatalf("the cleaner has %d logs, want the 5 compacted partitions", n)
	}
	if _, err := b.AddPartitions("users", 4); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTopic("accounts"); err != nil {
		t.Fatal(err)
	}
	if n := b.Stats().Cleaner.Logs; n != 4 {
		t.Fatalf("after growing users and deleting accounts the cleaner has %d logs, want 4", n)
	}
	// A plain topic refuses on-demand compaction; a compacted one runs it
	// on the shared cleaner.
	l, err := partLog(b, "events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(context.Background()); !errors.Is(err, log.ErrNotCompacted) {
		t.Fatalf("Compact of a delete topic: %v, want log.ErrNotCompacted", err)
	}
	cleaner := b.cleaner
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cleaner.Close(); !errors.Is(err, log.ErrClosed) {
		t.Fatalf("the cleaner after the Broker's Close: %v, want log.ErrClosed (closed by the Broker)", err)
	}
	// goleak (TestMain) checks that its workers are gone.
}

func TestOpenRefusesBadCleanerOptions(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir, &Options{Cleaner: &log.CleanerOptions{LoadFactor: 0.99}})
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, log.ErrInvalidOptions) {
		t.Fatalf("Open with a bad cleaner: %v, want ErrInvalidConfig wrapping log.ErrInvalidOptions", err)
	}
	// The lock was given back.
	b, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// encodeCheckpointV1 writes a checkpoint file as Folio did before the
// cleaner checkpoint existed (version 1), laid out by hand so that the
// test does not lean on the current encoder.
func encodeCheckpointV1(entries []checkpointEntry) []byte {
	var p []byte
	p = append(p, byte(len(entries)>>24), byte(len(entries)>>16), byte(len(entries)>>8), byte(len(entries)))
	be64 := func(v int64) []byte {
		var b [8]byte
		for i := range b {
			b[i] = byte(uint64(v) >> (56 - 8*i))
		}
		return b[:]
	}
	for _, e := range entries {
		p = append(p, e.id[:]...)
		p = append(p, byte(e.partition>>24), byte(e.partition>>16), byte(e.partition>>8), byte(e.partition))
		p = append(p, be64(e.recoveryPoint)...)
		p = append(p, be64(e.logStartOffset)...)
		p = append(p, byte(len(e.topic)>>8), byte(len(e.topic)))
		p = append(p, e.topic...)
	}
	return encodeMeta(checkpointMagic, 1, p)
}

func TestCheckpointReadsVersion1(t *testing.T) {
	var id topic.ID
	id[0] = 7
	v1 := encodeCheckpointV1([]checkpointEntry{
		{topic: "users", id: id, partition: 0, recoveryPoint: 40, logStartOffset: 3},
		{topic: "users", id: id, partition: 1, recoveryPoint: 1 << 40, logStartOffset: 0},
	})
	got, err := decodeCheckpoint(v1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[partKey]checkpointEntry{
		{id, 0}: {topic: "users", id: id, partition: 0, recoveryPoint: 40, logStartOffset: 3},
		{id, 1}: {topic: "users", id: id, partition: 1, recoveryPoint: 1 << 40, logStartOffset: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d entries, want %d", len(got), len(want))
	}
	for k, e := range want {
		if got[k] != e {
			t.Errorf("version 1 entry %+v decoded as %+v", e, got[k])
		}
	}
	// What is written is version 3, with the cleaner checkpoint and the
	// high watermark.
	v2 := encodeCheckpoint([]checkpointEntry{{topic: "users", id: id, partition: 0, recoveryPoint: 40, logStartOffset: 3, firstDirtyOffset: 17, highWatermark: 30}})
	if v, _, err := decodeMeta(CheckpointFile, checkpointMagic, v2); err != nil || v != 3 {
		t.Fatalf("encoded version %d (%v), want 3", v, err)
	}
	if m, err := decodeCheckpoint(v2); err != nil || m[partKey{id, 0}].firstDirtyOffset != 17 || m[partKey{id, 0}].highWatermark != 30 {
		t.Fatalf("version 3 round trip: %+v, %v", m, err)
	}
	// A version 3 payload framed as version 2 is refused too.
	if _, err := decodeCheckpoint(encodeMeta(checkpointMagic, 2, v2[metaHeaderSize:len(v2)-metaTrailerSize])); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 3 payload as version 2: %v, want ErrCorrupt", err)
	}
	// A version 1 payload framed as version 2 (or the reverse) is refused:
	// the entry sizes differ.
	if _, err := decodeCheckpoint(encodeMeta(checkpointMagic, 2, v1[metaHeaderSize:len(v1)-metaTrailerSize])); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 1 payload as version 2: %v, want ErrCorrupt", err)
	}
	if _, err := decodeCheckpoint(encodeMeta(checkpointMagic, 1, v2[metaHeaderSize:len(v2)-metaTrailerSize])); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 2 payload as version 1: %v, want ErrCorrupt", err)
	}
}

// compactedUsers creates a compacted topic with small segments and writes
// rounds of updates of keys user-0..user-(keys-1), then filler records
// (keys of their own) after them, so that the updates lie in sealed
// segments. MinCompactionLag (1h) keeps the cleaner away from them until
// the test moves the Broker's clock.
func compactedUsers(t *testing.T, b *Broker, name string, keys, rounds int) {
	t.Helper()
	createTopicT(t, b, name, TopicConfig{Partitions: 1, Cleanup: topic.CleanupCompact, SegmentBytes: 1024, MinCompactionLag: time.Hour})
	p := producerT(t, b, nil)
	ctx := context.Background()
	for r := range rounds {
		for k := range keys {
			if _, _, err := p.Produce(ctx, &Record{Topic: name, Key: []byte(fmt.Sprintf("user-%d", k)), Value: value("r", r)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 30 {
		if _, _, err := p.Produce(ctx, &Record{Topic: name, Key: []byte(fmt.Sprintf("filler-%d", i%3)), Value: value("f", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointKeepsFirstDirtyOffset: the cleaner checkpoint is written
// to CheckpointFile (the current version) and handed back to the log at Open; a
// version 1 file, which has none, opens with the log's default (nothing
// cleaned), and the next checkpoint is of the current version again. The records stay
// within MinCompactionLag on the Broker's clock whenever the test reads
// the checkpoint after an Open, so that no pass of the cleaner's own can
// have set it.
func TestCheckpointKeepsFirstDirtyOffset(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	clock := newTestClock(start)
	opts := &Options{Now: clock.Now, CheckpointInterval: -1, RetentionCheckInterval: -1,
		Cleaner: &log.CleanerOptions{CheckInterval: time.Hour}}
	b := openT(t, dir, opts)
	compactedUsers(t, b, "users", 8, 6)
	// A topic that does not compact has no cleaner checkpoint, whatever
	// its log start.
	createTopicT(t, b, "events", TopicConfig{})
	produceN(t, producerT(t, b, nil), "events", "e", 5)
	if err := b.DeleteRecordsBefore("events", 0, 3); err != nil {
		t.Fatal(err)
	}
	l, err := partLog(b, "users", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Compact(context.Background()); err != nil || res.Passes != 0 || l.Checkpoint().FirstDirtyOffset != 0 {
		t.Fatalf("compaction within MinCompactionLag: %+v, %v; want nothing cleaned", res, err)
	}
	clock.Advance(2 * time.Hour)
	res, err := l.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstDirtyOffset <= 0 || res.RecordsRemoved == 0 {
		t.Fatalf("compaction past MinCompactionLag did nothing: %+v", res)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	dirty := l.Checkpoint().FirstDirtyOffset
	if dirty != res.FirstDirtyOffset {
		t.Fatalf("the closed log checkpoints first dirty offset %d, the pass reported %d", dirty, res.FirstDirtyOffset)
	}
	clock.ns.Store(start.UnixNano()) // nothing cleanable again
	entries, err := ReadCheckpoint(dir)
	if err != nil || len(entries) != 2 || entries[1].FirstDirtyOffset != dirty || entries[1].Topic != "users" {
		t.Fatalf("ReadCheckpoint: %+v, %v; want users-0 with first dirty offset %d", entries, err, dirty)
	}
	if e := entries[0]; e.Topic != "events" || e.LogStartOffset != 3 || e.FirstDirtyOffset != 0 {
		t.Fatalf("checkpoint of a delete topic: %+v, want log start 3 and no cleaner checkpoint", e)
	}
	if errs := CheckMetadata(dir); len(errs) != 0 {
		t.Fatalf("CheckMetadata: %v", errs)
	}

	b = openT(t, dir, opts)
	l, err = partLog(b, "users", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Checkpoint().FirstDirtyOffset; got != dirty {
		t.Fatalf("after reopening, first dirty offset %d, want %d", got, dirty)
	}
	if ps := b.Stats().Partitions; ps[1].Topic != "users" || ps[1].Compaction.FirstDirtyOffset != dirty || ps[0].Compaction != (log.CompactionStats{}) {
		t.Fatalf("Stats reports compaction %+v for users and %+v for events, want first dirty offset %d and nothing", ps[1].Compaction, ps[0].Compaction, dirty)
	}
	records := logRecords(t, l)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The same directory as an older Folio would have left it: a version
	// 1 checkpoint, without the cleaner checkpoint.
	var v1 []checkpointEntry
	for _, e := range entries {
		v1 = append(v1, checkpointEntry{topic: e.Topic, id: e.TopicID, partition: e.Partition,
			recoveryPoint: e.RecoveryPoint, logStartOffset: e.LogStartOffset})
	}
	if err := os.WriteFile(filepath.Join(dir, CheckpointFile), encodeCheckpointV1(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := CheckMetadata(dir); len(errs) != 0 {
		t.Fatalf("CheckMetadata of a version 1 checkpoint: %v", errs)
	}
	if entries, err := ReadCheckpoint(dir); err != nil || entries[1].FirstDirtyOffset != 0 || entries[1].RecoveryPoint != v1[1].recoveryPoint {
		t.Fatalf("ReadCheckpoint of version 1: %+v, %v", entries, err)
	}
	b = openT(t, dir, opts)
	l, err = partLog(b, "users", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Checkpoint().FirstDirtyOffset; got != l.LogStartOffset() {
		t.Fatalf("a version 1 checkpoint opened with first dirty offset %d, want the log start %d", got, l.LogStartOffset())
	}
	if got := logRecords(t, l); fmt.Sprint(got) != fmt.Sprint(records) {
		t.Fatalf("records after opening with a version 1 checkpoint:\n%v\nwant\n%v", got, records)
	}
	// Cleaning the whole log again changes nothing and restores the
	// cleaner checkpoint.
	clock.Advance(2 * time.Hour)
	if res, err := l.Compact(context.Background()); err != nil || res.FirstDirtyOffset != dirty || res.RecordsRemoved != 0 {
		t.Fatalf("compacting again: %+v, %v; want first dirty offset %d and nothing removed", res, err, dirty)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := decodeMeta(CheckpointFile, checkpointMagic, data); err != nil || v != checkpointVersion {
		t.Fatalf("the checkpoint after a version 1 one is version %d (%v), want the current one", v, err)
	}
	if entries, err := ReadCheckpoint(dir); err != nil || entries[1].FirstDirtyOffset != dirty || entries[0].LogStartOffset != 3 {
		t.Fatalf("ReadCheckpoint: %+v, %v; want users-0 first dirty offset %d and events-0 start 3", entries, err, dirty)
	}
}

// TestGroupOffsetsTopicIsCompacted: the offsets topic the group wiring
// creates compacts: a group that committed many times holds fewer records
// after a compaction of its partition of __consumer_offsets, and resumes
// from its last commit after a restart.
func TestGroupOffsetsTopicIsCompacted(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock(time.Now())
	opts := &Options{Now: clock.Now, CheckpointInterval: -1, RetentionCheckInterval: -1}
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	const parts, perPart, commits = 3, 100, 40
	createTopicT(t, b, "orders", TopicConfig{Partitions: parts})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for part := range int32(parts) {
		for i := range perPart {
			if _, _, err := p.Produce(ctx, &Record{Topic: "orders", Partition: part, Value: value("o", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	gc := joinT(t, b, "billing", []string{"orders"}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	ti, err := b.DescribeTopic(group.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if ti.Config.Cleanup != topic.CleanupCompact || !ti.Internal {
		t.Fatalf("%s: %+v, want an internal compacted topic", group.OffsetsTopic, ti)
	}
	offsetsPart := group.PartitionFor("billing", int32(len(ti.Partitions)))
	l, err := partLog(b, group.OffsetsTopic, offsetsPart)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= commits; i++ {
		if i == commits/2 {
			// The offsets topic's segments are 100 MiB: age rolls the
			// active one instead, so that the first half of the commits
			// lies in a sealed segment the cleaner may clean.
			clock.Advance(topic.DefaultSegmentAge + time.Hour)
		}
		offs := map[TopicPartition]int64{}
		for part := range int32(parts) {
			offs[TopicPartition{Topic: "orders", Partition: part}] = int64(i)
		}
		if err := gc.CommitOffsets(ctx, offs); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	// The cleaner may have cleaned the sealed segment on its own already
	// (its dirty ratio is 1); Compact makes sure, and the counters since
	// Open say what went.
	if _, err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after := logRecords(t, l)
	written := l.LogEndOffset() - l.LogStartOffset() // one offset per commit record
	if cs := l.CompactionStats(); cs.RecordsRemoved == 0 || int64(len(after)) != written-cs.RecordsRemoved {
		t.Fatalf("compacting the group's offsets partition: %+v; %d records of %d written remain", cs, len(after), written)
	}
	// Besides the commits, the group's metadata record of the member's
	// first generation (written when its assignment completed).
	if written != parts*commits+1 {
		t.Fatalf("%d records written, want %d commits and 1 group metadata record", written, parts*commits)
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if l, err = partLog(b, group.OffsetsTopic, offsetsPart); err != nil {
		t.Fatal(err)
	}
	// The member's Close appended the group's Empty metadata record.
	if got := logRecords(t, l); len(got) != len(after)+1 {
		t.Fatalf("after reopening the offsets partition holds %d records, want the %d compaction left and the group's Empty record", len(got), len(after))
	}
	lag, err := b.GroupLag("billing")
	if err != nil {
		t.Fatal(err)
	}
	if len(lag) != parts {
		t.Fatalf("lag of %d partitions, want %d", len(lag), parts)
	}
	for _, pl := range lag {
		if pl.Committed != commits {
			t.Fatalf("%+v: committed %d, want the last commit %d", pl, pl.Committed, commits)
		}
	}
	gc = joinT(t, b, "billing", []string{"orders"}, &GroupOptions{Reset: ResetEarliest, DisableAutoCommit: true})
	first := map[int32]int64{}
	for r, err := range gc.Records(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
		}
		if len(first) == parts {
			break
		}
	}
	for part, off := range first {
		if off != commits {
			t.Fatalf("orders-%d resumed at %d, want the last commit %d", part, off, commits)
		}
	}
}

// TestCompactedTopicEndToEnd: keyed produce with overwrites and tombstones
// to a compacted topic, compaction on demand (while a consumer reads), and
// consumers from the earliest offset that see gaps, never an error, and
// the latest value of every key; tombstones go after DeleteRetention; all
// of it survives Close and Open.
func TestCompactedTopicEndToEnd(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	dir := t.TempDir()
	clock := newTestClock(time.Now())
	opts := &Options{Now: clock.Now, CheckpointInterval: -1, RetentionCheckInterval: -1,
		Cleaner: &log.CleanerOptions{CheckInterval: time.Hour}}
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	const parts = 2
	createTopicT(t, b, "users", TopicConfig{Partitions: parts, Cleanup: topic.CleanupCompact, SegmentBytes: 1024, DeleteRetention: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// produced[partition][offset] is what was written there; latest[key]
	// the newest record of each key.
	type loc struct {
		part   int32
		offset int64
		value  []byte
	}
	produced := [parts]map[int64]logRec{{}, {}}
	latest := map[string]loc{}
	produceWith := func(p *Producer, recs []*Record) {
		t.Helper()
		var mu sync.Mutex
		var errs []error
		for _, r := range recs {
			p.ProduceAsync(ctx, r, func(r *Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Fatal(errs[0])
		}
		for _, r := range recs {
			produced[r.Partition][r.Offset] = logRec{offset: r.Offset, key: r.Key, value: r.Value}
			if l, ok := latest[string(r.Key)]; !ok || r.Offset > l.offset {
				latest[string(r.Key)] = loc{r.Partition, r.Offset, r.Value}
			}
		}
	}
	var recs []*Record
	for i := range 800 {
		r := &Record{Topic: "users", Key: []byte(fmt.Sprintf("user-%02d", rng.IntN(40)))}
		if rng.IntN(8) != 0 {
			r.Value = value("u", i)
		} // else a tombstone
		recs = append(recs, r)
	}
	// Keys deleted for good, then filler after them so that their
	// tombstones are in sealed segments.
	for k := range 4 {
		recs = append(recs, &Record{Topic: "users", Key: []byte(fmt.Sprintf("user-%02d", k))})
	}
	p := producerT(t, b, nil)
	produceWith(p, recs)
	// filler writes n records to every partition, under keys of their
	// own, so that every partition has new dirty segments (the cleaner
	// passes over a partition only then) and what came before is sealed.
	manual := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	filler := func(n int, tag string) {
		t.Helper()
		recs = recs[:0]
		for part := range int32(parts) {
			for i := range n {
				recs = append(recs, &Record{Topic: "users", Partition: part, Key: []byte(fmt.Sprintf("filler-%d-%d", part, i%5)), Value: value(tag, i)})
			}
		}
		produceWith(manual, recs)
	}
	filler(50, "f1")

	logs := make([]*log.Log, parts)
	for part := range int32(parts) {
		if logs[part], err = partLog(b, "users", part); err != nil {
			t.Fatal(err)
		}
	}

	// read reads every partition from the earliest offset to the high
	// watermark with a plain consumer, checking that offsets only grow and
	// that every record is the one produced at its offset.
	read := func(c *Consumer) ([parts][]logRec, error) {
		var out [parts][]logRec
		if err := c.Assign(Assignment{Topic: "users", Partition: 0, Start: AtEarliest()}, Assignment{Topic: "users", Partition: 1, Start: AtEarliest()}); err != nil {
			return out, err
		}
		for {
			done := true
			for part := range int32(parts) {
				if lag, err := c.Lag("users", part); err != nil || lag > 0 {
					done = false
				}
			}
			if done {
				return out, nil
			}
			got, err := c.Poll(ctx)
			if err != nil {
				return out, fmt.Errorf("Poll: %w", err)
			}
			for _, r := range got {
				rs := out[r.Partition]
				if len(rs) > 0 && r.Offset <= rs[len(rs)-1].offset {
					return out, fmt.Errorf("users-%d: offset %d after %d", r.Partition, r.Offset, rs[len(rs)-1].offset)
				}
				want, ok := produced[r.Partition][r.Offset]
				if !ok || !bytes.Equal(r.Key, want.key) || !bytes.Equal(r.Value, want.value) || (r.Value == nil) != (want.value == nil) {
					return out, fmt.Errorf("users-%d@%d: key %q value %q, produced %+v", r.Partition, r.Offset, r.Key, r.Value, want)
				}
				out[r.Partition] = append(rs, logRec{offset: r.Offset, key: r.Key, value: r.Value})
			}
		}
	}
	consume := func(c *Consumer) [parts][]logRec {
		t.Helper()
		out, err := read(c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	total := func(rs [parts][]logRec) int { return len(rs[0]) + len(rs[1]) }
	nProduced := len(produced[0]) + len(produced[1])

	// A consumer reads, slowly, while the first compaction runs.
	type sideResult struct {
		recs [parts][]logRec
		err  error
	}
	side := make(chan sideResult, 1)
	sideConsumer := consumerT(t, b, &ConsumerOptions{MaxPollRecords: 5})
	go func() {
		recs, err := read(sideConsumer)
		side <- sideResult{recs, err}
	}()
	// The cleaner's workers clean on their own too (a sealed segment wakes
	// them): the log's counters since Open cover their passes and these.
	var removed int64
	for _, l := range logs {
		if _, err := l.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		removed += l.CompactionStats().RecordsRemoved
	}
	if removed == 0 {
		t.Fatal("the first compaction removed nothing")
	}
	if res := <-side; res.err != nil || total(res.recs) == 0 {
		t.Fatalf("the consumer beside the compaction: %d records, %v", total(res.recs), res.err)
	}

	// checkLatest: the last record of every key is its newest one, a
	// deleted key's last record is its tombstone or (tombstoneGone) none,
	// and no key repeats in the clean part of a partition.
	checkLatest := func(what string, rs [parts][]logRec, tombstoneGone func(key string) bool) {
		t.Helper()
		last := map[string]logRec{}
		for part := range int32(parts) {
			clean := logs[part].Checkpoint().FirstDirtyOffset
			inClean := map[string]int64{}
			for _, r := range rs[part] {
				last[string(r.key)] = r
				if r.offset < clean {
					if prev, dup := inClean[string(r.key)]; dup {
						t.Fatalf("%s: users-%d: key %s at %d and %d, both below the first dirty offset %d", what, part, r.key, prev, r.offset, clean)
					}
					inClean[string(r.key)] = r.offset
				}
			}
		}
		for key, want := range latest {
			got, ok := last[key]
			switch {
			case want.value == nil && tombstoneGone(key):
				if ok {
					t.Fatalf("%s: deleted key %s still has a record at %d (tombstone retention is over)", what, key, got.offset)
				}
			case !ok || got.offset != want.offset || !bytes.Equal(got.value, want.value) || (got.value == nil) != (want.value == nil):
				t.Fatalf("%s: key %s: last record %+v (found %v), want offset %d value %q", what, key, got, ok, want.offset, want.value)
			}
		}
	}
	never := func(string) bool { return false }

	after1 := consume(consumerT(t, b, nil))
	if total(after1) != nProduced-int(removed) {
		t.Fatalf("consumer read %d records, %d produced less %d removed", total(after1), nProduced, removed)
	}
	gaps := 0
	for part := range parts {
		prev := logs[part].LogStartOffset() - 1
		for _, r := range after1[part] {
			if r.offset > prev+1 {
				gaps++
			}
			prev = r.offset
		}
	}
	if gaps == 0 {
		t.Fatal("no offset gaps after compaction")
	}
	checkLatest("after the first compaction", after1, never)

	// Tombstones stay DeleteRetention (1h) after their segment was first
	// cleaned: half an hour later a pass keeps them.
	clock.Advance(30 * time.Minute)
	filler(50, "f2")
	for _, l := range logs {
		if _, err := l.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	checkLatest("half an hour later", consume(consumerT(t, b, nil)), never)
	// The tombstones cleaned so far were cleaned at most half an hour
	// after the first pass.
	var cleaned [parts]int64
	for part := range parts {
		cleaned[part] = logs[part].Checkpoint().FirstDirtyOffset
	}
	oldTombstone := func(key string) bool {
		l := latest[key]
		return l.value == nil && l.offset < cleaned[l.part]
	}
	nOld := 0
	for key := range latest {
		if oldTombstone(key) {
			nOld++
		}
	}
	if nOld < 4 {
		t.Fatalf("%d tombstones in the cleaned part, want at least the 4 deletes", nOld)
	}

	// Two hours later, past any restart of their retention by the second
	// pass, the next pass drops them.
	var tombsBefore int64
	for _, l := range logs {
		tombsBefore += l.CompactionStats().TombstonesRemoved
	}
	if tombsBefore != 0 {
		t.Fatalf("%d tombstones removed within DeleteRetention", tombsBefore)
	}
	clock.Advance(2 * time.Hour)
	filler(50, "f3")
	var tombs int64
	for _, l := range logs {
		if _, err := l.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		tombs += l.CompactionStats().TombstonesRemoved
	}
	if tombs < int64(nOld) {
		t.Fatalf("the pass past DeleteRetention removed %d tombstones, want at least the %d cleaned 2h before", tombs, nOld)
	}
	final := consume(consumerT(t, b, nil))
	checkLatest("past DeleteRetention", final, oldTombstone)

	var dirty [parts]int64
	for part := range parts {
		dirty[part] = logs[part].Checkpoint().FirstDirtyOffset
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(parts) {
		if logs[part], err = partLog(b, "users", part); err != nil {
			t.Fatal(err)
		}
		if got := logs[part].Checkpoint().FirstDirtyOffset; got != dirty[part] {
			t.Fatalf("users-%d reopened with first dirty offset %d, want %d", part, got, dirty[part])
		}
	}
	reopened := consume(consumerT(t, b, nil))
	if fmt.Sprint(reopened) != fmt.Sprint(final) {
		t.Fatalf("after Close and Open the topic reads\n%v\nwant\n%v", reopened, final)
	}
	checkLatest("after reopening", reopened, oldTombstone)
	// The topic takes keyed records after the restart.
	manual = producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	filler(10, "f4")
	if got := consume(consumerT(t, b, nil)); total(got) != total(final)+10*parts {
		t.Fatalf("after %d more records the topic reads %d, want %d", 10*parts, total(got), total(final)+10*parts)
	}
}
