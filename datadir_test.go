package folio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

func TestOpenInitializesFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	b := openT(t, dir, nil)
	data, err := os.ReadFile(filepath.Join(dir, FormatFile))
	if err != nil {
		t.Fatal(err)
	}
	v, payload, err := decodeMeta(FormatFile, formatMagic, data)
	if err != nil || v != FormatVersion || string(payload) != formatPayload {
		t.Fatalf("format file: version %d payload %q err %v", v, payload, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening an initialized directory keeps its format file as it was.
	b2 := openT(t, dir, nil)
	again, _ := os.ReadFile(filepath.Join(dir, FormatFile))
	if !bytes.Equal(again, data) {
		t.Fatal("format file rewritten on reopen")
	}
	_ = b2
}

func TestOpenRefusesUnknownFormatVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FormatFile), encodeMeta(formatMagic, FormatVersion+1, []byte(formatPayload)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("Open: %v, want ErrUnknownFormat", err)
	}
	if !strings.Contains(err.Error(), "version "+strconv.Itoa(FormatVersion+1)) {
		t.Fatalf("error %q does not name the version", err)
	}
	assertOnlyFiles(t, dir, LockFile, FormatFile)
	if _, err := OpenReadOnly(dir, nil); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("OpenReadOnly: %v, want ErrUnknownFormat", err)
	}
}

func TestOpenRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("Open: %v, want ErrUnknownFormat naming notes.txt", err)
	}
	assertOnlyFiles(t, dir, LockFile, "notes.txt")
}

func TestOpenReportsCorruptFormatFile(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, FormatFile)
	data, _ := os.ReadFile(p)
	data[len(data)-6] ^= 0x01 // inside the payload
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrCorrupt) || !IsCorrupt(err) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

// assertOnlyFiles fails unless dir holds exactly names (a refused Open must
// not have created a catalog or anything else).
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
}

func TestSecondOpenIsRefusedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrDirLocked) {
		t.Fatalf("second Open: %v, want ErrDirLocked", err)
	}
	if want := "pid=" + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the holder %s", err, want)
	}
	host, _ := os.Hostname()
	if !strings.Contains(err.Error(), "host="+host) {
		t.Fatalf("error %q does not name the host %s", err, host)
	}
	// A read-only open does not need the lock.
	ro, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatalf("OpenReadOnly beside a writer: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	var id1, id2 topic.ID
	id1[0], id2[15] = 1, 2
	in := []checkpointEntry{
		{topic: "b", id: id2, partition: 3, recoveryPoint: 1 << 40, logStartOffset: 7, firstDirtyOffset: 1<<40 - 5},
		{topic: "a", id: id1, partition: 0, recoveryPoint: 0, logStartOffset: 0},
		{topic: "a", id: id1, partition: 1, recoveryPoint: 99, logStartOffset: 12, firstDirtyOffset: 40, highWatermark: 77},
	}
	data := encodeCheckpoint(slices.Clone(in))
	got, err := decodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("decoded %d entries, want %d", len(got), len(in))
	}
	for _, e := range in {
		if g := got[partKey{e.id, e.partition}]; g != e {
			t.Fatalf("entry %+v decoded as %+v", e, g)
		}
	}
	// Equal states encode equally whatever the order.
	slices.Reverse(in)
	if !bytes.Equal(encodeCheckpoint(in), data) {
		t.Fatal("encoding depends on entry order")
	}
}

func TestCheckpointDecodeRefusesDamage(t *testing.T) {
	var id topic.ID
	good := encodeCheckpoint([]checkpointEntry{{topic: "t", id: id, partition: 1, recoveryPoint: 5, logStartOffset: 2}})
	flip := func(i int) []byte { d := slices.Clone(good); d[i] ^= 0x80; return d }
	cases := map[string]struct {
		data []byte
		want error
	}{
		"empty":          {nil, ErrCorrupt},
		"truncated":      {good[:len(good)-1], ErrCorrupt},
		"payload bit":    {flip(metaHeaderSize + 10), ErrCorrupt},
		"crc bit":        {flip(len(good) - 1), ErrCorrupt},
		"length field":   {flip(11), ErrCorrupt},
		"other magic":    {encodeMeta(formatMagic, 1, []byte("x")), ErrUnknownFormat},
		"newer version":  {encodeMeta(checkpointMagic, checkpointVersion+1, []byte{0, 0, 0, 0}), ErrUnknownFormat},
		"count too big":  {encodeMeta(checkpointMagic, checkpointVersion, []byte{0, 0, 0, 9}), ErrCorrupt},
		"trailing bytes": {encodeMeta(checkpointMagic, checkpointVersion, []byte{0, 0, 0, 0, 1}), ErrCorrupt},
		"negative offset v1": {encodeMeta(checkpointMagic, 1, append([]byte{0, 0, 0, 1},
			append(make([]byte, 16+4), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)...)), ErrCorrupt},
		"negative first dirty offset": {encodeMeta(checkpointMagic, 2, append([]byte{0, 0, 0, 1},
			append(make([]byte, 16+4+8+8), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0)...)), ErrCorrupt},
		"version 0":          {encodeMeta(checkpointMagic, 0, []byte{0, 0, 0, 0}), ErrUnknownFormat},
		"v1 entry truncated": {encodeMeta(checkpointMagic, 1, append([]byte{0, 0, 0, 1}, make([]byte, 16+4+8+8+1)...)), ErrCorrupt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeCheckpoint(tc.data); !errors.Is(err, tc.want) {
				t.Fatalf("decode: %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzDecodeCheckpoint: decoding never panics, and whatever decodes
// re-encodes to a file that decodes to the same entries.
func FuzzDecodeCheckpoint(f *testing.F) {
	var id topic.ID
	id[3] = 9
	f.Add(encodeCheckpoint(nil))
	f.Add(encodeCheckpoint([]checkpointEntry{{topic: "orders", id: id, partition: 2, recoveryPoint: 100, logStartOffset: 10}}))
	f.Add(encodeCheckpoint([]checkpointEntry{{topic: "a", id: id}, {topic: "b", id: topic.ID{1}, partition: 1 << 20}}))
	f.Add([]byte("FCHK\x00\x01\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00"))
	f.Add(encodeCheckpoint([]checkpointEntry{{topic: "users", id: id, partition: 1, recoveryPoint: 90, logStartOffset: 5, firstDirtyOffset: 60}}))
	f.Add(encodeCheckpointV1([]checkpointEntry{{topic: "orders", id: id, partition: 2, recoveryPoint: 100, logStartOffset: 10}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeCheckpoint(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("error outside the corruption classes: %v", err)
			}
			return
		}
		entries := make([]checkpointEntry, 0, len(m))
		for _, e := range m {
			entries = append(entries, e)
		}
		again, err := decodeCheckpoint(encodeCheckpoint(entries))
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if len(again) != len(m) {
			t.Fatalf("%d entries after a round trip, want %d", len(again), len(m))
		}
		for k, e := range m {
			if again[k] != e {
				t.Fatalf("entry %+v became %+v", e, again[k])
			}
		}
	})
}

// TestCleanShutdownMarker follows the marker through a session: written
// durably at Close, trusted at Open, and removed durably before the first
// write of the next session reaches a partition.
func TestCleanShutdownMarker(t *testing.T) {
	fs := faultfs.New()
	dir := t.TempDir()
	b := openT(t, dir, faultOpts(fs))
	createTopicT(t, b, "t", TopicConfig{Partitions: 2})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "a", 20)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !durablyNamed(fs, dir, CleanShutdownFile) || !durablyNamed(fs, dir, CheckpointFile) {
		t.Fatal("Close left no durable marker or checkpoint")
	}

	// Record the order of operations of the next session.
	type event struct {
		kind faultfs.OpKind
		path string
	}
	var (
		eventsMu sync.Mutex // guards events
		events   []event
	)
	fs.SetHook(func(op faultfs.Op) error {
		eventsMu.Lock()
		events = append(events, event{op.Kind, op.Path})
		eventsMu.Unlock()
		return nil
	})
	b = openT(t, dir, faultOpts(fs))
	if !fileExists(dir, CleanShutdownFile) {
		t.Fatal("Open removed the marker before any write")
	}
	p = producerT(t, b, nil)
	produceN(t, p, "t", "b", 5)
	if fileExists(dir, CleanShutdownFile) || durablyNamed(fs, dir, CleanShutdownFile) {
		t.Fatal("marker still there (or not durably gone) after a write")
	}
	eventsMu.Lock()
	seq := slices.Clone(events)
	eventsMu.Unlock()
	fs.SetHook(nil)
	removed, synced := -1, -1
	firstPartWrite := -1
	for i, e := range seq {
		switch {
		case e.kind == faultfs.OpRemove && filepath.Base(e.path) == CleanShutdownFile && removed < 0:
			removed = i
		case e.kind == faultfs.OpSyncDir && removed >= 0 && synced < 0 && filepath.Clean(e.path) == filepath.Clean(dir):
			synced = i
		case firstPartWrite < 0 && strings.HasPrefix(e.path, filepath.Join(dir, "t-")) &&
			(e.kind == faultfs.OpWrite || e.kind == faultfs.OpCreate || e.kind == faultfs.OpTruncate || e.kind == faultfs.OpAllocate || e.kind == faultfs.OpRemove || e.kind == faultfs.OpRename):
			firstPartWrite = i
		}
	}
	if removed < 0 || synced < 0 || firstPartWrite < 0 {
		t.Fatalf("marker removal %d, dir sync %d, first partition write %d: %v", removed, synced, firstPartWrite, seq)
	}
	if !(removed < synced && synced < firstPartWrite) {
		t.Fatalf("marker removed at op %d, dir synced at %d, first partition write at %d: the marker must go durably first", removed, synced, firstPartWrite)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !durablyNamed(fs, dir, CleanShutdownFile) {
		t.Fatal("second Close left no durable marker")
	}
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func durablyNamed(fs *faultfs.FS, dir, name string) bool {
	names, _ := fs.DurableNames(dir)
	return slices.Contains(names, name)
}

func TestCheckpointHoldsRecoveryPointsAndStarts(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, &Options{CheckpointInterval: -1})
	ti := createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushSync})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	for i := range 10 {
		if _, _, err := p.Produce(t.Context(), &Record{Topic: "t", Partition: int32(i % 2), Value: value("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteRecordsBefore("t", 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	m, err := readCheckpoint(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][2]int64{0: {5, 0}, 1: {5, 3}}
	for part, w := range want {
		e, ok := m[partKey{ti.ID, part}]
		if !ok || e.recoveryPoint != w[0] || e.logStartOffset != w[1] || e.topic != "t" {
			t.Fatalf("partition %d: entry %+v (found %v), want recovery point %d, start %d", part, e, ok, w[0], w[1])
		}
	}
	if st := b.Stats(); st.Checkpoints != 2 || st.LastCheckpoint.IsZero() { // DeleteRecordsBefore checkpoints too
		t.Fatalf("Stats: %d checkpoints at %v", st.Checkpoints, st.LastCheckpoint)
	}
	// The start offset survives a restart: the next Open serves from 3.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, nil)
	ti2, err := b.DescribeTopic("t")
	if err != nil {
		t.Fatal(err)
	}
	if got := ti2.Partitions[1].LogStartOffset; got != 3 {
		t.Fatalf("log start offset after reopen %d, want 3", got)
	}
}

// TestPeriodicCheckpoint: the Broker writes the checkpoint on its own
// schedule, with the recovery points of what was appended since.
func TestPeriodicCheckpoint(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, &Options{CheckpointInterval: 10 * time.Millisecond})
	ti := createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "p", 7)
	deadline := time.Now().Add(10 * time.Second)
	for {
		es, err := ReadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 1 && es[0].TopicID == ti.ID && es[0].RecoveryPoint == 7 && b.Stats().Checkpoints >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint with recovery point 7 after 10 s: %+v", es)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRecoveryStartsAtCheckpoint: after a crash, a partition scans only the
// segments from its checkpointed recovery point on; without a checkpoint it
// scans them all. The Broker's logger reports what each partition did.
func TestRecoveryStartsAtCheckpoint(t *testing.T) {
	for _, checkpointed := range []bool{true, false} {
		t.Run(fmt.Sprintf("checkpointed=%v", checkpointed), func(t *testing.T) {
			dir := t.TempDir()
			b := openT(t, dir, &Options{CheckpointInterval: -1})
			createTopicT(t, b, "t", TopicConfig{Flush: FlushSync, SegmentBytes: 4096})
			p := producerT(t, b, nil)
			for i := range 800 {
				p.ProduceAsync(context.Background(), &Record{Topic: "t", Value: append(value("a", i), make([]byte, 100)...)}, nil)
			}
			if err := p.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if checkpointed {
				if err := b.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			produceN(t, p, "t", "b", 3)
			segments := b.Stats().Partitions[0].Segments
			kill(t, b, nil)

			var logBuf bytes.Buffer
			var logMu sync.Mutex // guards logBuf
			logger := slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logBuf}, nil))
			b = openT(t, dir, &Options{CheckpointInterval: -1, Logger: logger})
			var rec struct {
				Msg             string
				SegmentsScanned int
			}
			logMu.Lock()
			for _, line := range strings.Split(logBuf.String(), "\n") {
				if strings.Contains(line, "partition: recovered") {
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			logMu.Unlock()
			if rec.Msg == "" {
				t.Fatalf("no recovery reported:\n%s", logBuf.String())
			}
			if segments < 10 {
				t.Fatalf("only %d segments: the test shows nothing", segments)
			}
			if checkpointed && rec.SegmentsScanned > 2 {
				t.Fatalf("scanned %d of %d segments despite a checkpoint", rec.SegmentsScanned, segments)
			}
			if !checkpointed && rec.SegmentsScanned != segments {
				t.Fatalf("scanned %d of %d segments without a checkpoint", rec.SegmentsScanned, segments)
			}
			ti, _ := b.DescribeTopic("t")
			if ti.Partitions[0].LogEndOffset != 803 {
				t.Fatalf("log end %d after recovery, want 803", ti.Partitions[0].LogEndOffset)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestDeleteRecordsSurvivesCrash: the log start offset DeleteRecordsBefore
// sets is checkpointed at once, so a crash right after does not bring the
// records back.
func TestDeleteRecordsSurvivesCrash(t *testing.T) {
	fs := faultfs.New()
	dir := t.TempDir()
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "d", 10)
	if err := b.DeleteRecordsBefore("t", 0, 4); err != nil {
		t.Fatal(err)
	}
	kill(t, b, fs)
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, faultOpts(fs))
	ti, err := b.DescribeTopic("t")
	if err != nil {
		t.Fatal(err)
	}
	if got := ti.Partitions[0].LogStartOffset; got != 4 {
		t.Fatalf("log start offset %d after a crash, want 4", got)
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t"})
	if recs := pollN(t, c, 6); recs[0].Offset != 4 {
		t.Fatalf("first record %d", recs[0].Offset)
	}
}
