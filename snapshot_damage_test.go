package folio

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedProducerStateSnapshotIsRebuilt: a producer-state snapshot
// damaged between sessions is reported at the next writing open, naming
// the file, rebuilt from the log and rewritten, so that verify finds the
// directory sound again; the rebuilt state still knows the producer.
func TestDamagedProducerStateSnapshotIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "t", TopicConfig{})
	produceN(t, producerT(t, b, nil), "t", "s", 5) // idempotent by default
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, producerStateDir, "*"+snapshotSuffix))
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v, want one", snaps)
	}
	data, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(snaps[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := CheckMetadata(dir); len(errs) != 1 {
		t.Fatalf("verify before the open: %v, want the damaged snapshot", errs)
	}

	var warned errWarnings
	b, err = Open(dir, &Options{Logger: slog.New(&warned)})
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, m := range warned.msgs {
		named = named || strings.Contains(m, "producer-state snapshot damaged")
	}
	if !named || !strings.Contains(warned.attrText("snapshot"), snaps[0]) {
		t.Fatalf("warnings %v (snapshot %q): want one naming %s", warned.msgs, warned.attrText("snapshot"), snaps[0])
	}
	if errs := CheckMetadata(dir); len(errs) != 0 {
		t.Fatalf("verify after the open: %v, want the snapshot rewritten", errs)
	}
	p, err := b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Producers(); n != 1 {
		t.Fatalf("rebuilt state holds %d producers, want 1", n)
	}
	if _, _, err := producerT(t, b, nil).Produce(context.Background(), &Record{Topic: "t", Value: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	warned = errWarnings{}
	b, err = Open(dir, &Options{Logger: slog.New(&warned)})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned.msgs) != 0 {
		t.Fatalf("the open after the repair warns: %v", warned.msgs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
