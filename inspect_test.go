package folio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInspectMetadata(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	ti := createTopicT(t, b, "t", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, nil)
	produceN(t, p, "t", "x", 10)
	// Beside a live Broker: the format is there, no checkpoint yet.
	if err := CheckFormat(dir); err != nil {
		t.Fatal(err)
	}
	if es, err := ReadCheckpoint(dir); err != nil || len(es) != 0 {
		t.Fatalf("ReadCheckpoint before any checkpoint: %v, %v", es, err)
	}
	if err := b.DeleteRecordsBefore("t", 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if errs := CheckMetadata(dir); len(errs) != 0 {
		t.Fatalf("CheckMetadata of a sound directory: %v", errs)
	}
	es, err := ReadCheckpoint(dir)
	if err != nil || len(es) != 2 {
		t.Fatalf("ReadCheckpoint: %v, %v", es, err)
	}
	if es[0].Topic != "t" || es[0].Partition != 0 || es[0].TopicID != ti.ID || es[0].LogStartOffset != 1 || es[0].RecoveryPoint+es[1].RecoveryPoint != 10 {
		t.Fatalf("entries %+v", es)
	}

	// Damage each file in turn: CheckMetadata names it.
	snaps, _ := filepath.Glob(filepath.Join(dir, producerStateDir, "*"+snapshotSuffix))
	if len(snaps) == 0 {
		t.Fatal("no producer-state snapshot was written at Close")
	}
	for _, f := range []string{filepath.Join(dir, FormatFile), filepath.Join(dir, CheckpointFile), filepath.Join(dir, CleanShutdownFile), snaps[0]} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bad := append([]byte(nil), data...)
		bad[len(bad)/2] ^= 0x10
		if err := os.WriteFile(f, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		errs := CheckMetadata(dir)
		if len(errs) != 1 || !IsCorrupt(errs[0]) || !strings.Contains(errs[0].Error(), filepath.Base(f)) {
			t.Fatalf("after damaging %s: %v", filepath.Base(f), errs)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckFormat(filepath.Join(dir, "t-0")); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("CheckFormat of a partition directory: %v", err)
	}
}
