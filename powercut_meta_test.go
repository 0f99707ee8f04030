package folio

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestCloseIsDurableAgainstPowerCut: what a clean Close promises survives a
// power cut right after it: the records of a FlushNone topic, the
// checkpoint (recovery point at the log end), the producer-state snapshot
// and the clean-shutdown marker. Each is written with an fsync of its file
// and of its directory; removing any of them makes this test fail (see
// docs/ARCHITECTURE.md, Testing).
func TestCloseIsDurableAgainstPowerCut(t *testing.T) {
	fs := faultfs.New()
	dir := t.TempDir()
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, b, nil) // idempotent: a snapshot at Close
	produceN(t, p, "t", "c", 20)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatalf("clean-shutdown marker after the power cut: %v", err)
	}
	entries, err := ReadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Topic == "t" {
			found = true
			if e.RecoveryPoint != 20 {
				t.Errorf("checkpoint's recovery point %d after the power cut, want the log end 20", e.RecoveryPoint)
			}
		}
	}
	if !found {
		t.Fatalf("checkpoint after the power cut holds no entry of t: %+v", entries)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, producerStateDir, "*"+snapshotSuffix))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after the power cut: %v, want one", snaps)
	}
	if errs := CheckMetadata(dir); len(errs) != 0 {
		t.Fatalf("metadata after the power cut: %v", errs)
	}
	b = openT(t, dir, faultOpts(fs))
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "t", Start: AtEarliest()})
	for i, r := range pollN(t, c, 20) {
		if r.Offset != int64(i) || string(r.Value) != string(value("c", i)) {
			t.Fatalf("record %d after the power cut: offset %d %q", i, r.Offset, r.Value)
		}
	}
}

// TestDeleteTopicSurvivesPowerCut: a deleted topic stays deleted after a
// power cut right after DeleteTopic returned (its catalog entry is gone
// durably, its directories never come back under their names), the other
// topics keep their records, and a topic created again under the name
// starts empty.
func TestDeleteTopicSurvivesPowerCut(t *testing.T) {
	fs := faultfs.New()
	dir := t.TempDir()
	b, err := Open(dir, faultOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	createTopicT(t, b, "gone", TopicConfig{Partitions: 2, Flush: FlushSync})
	createTopicT(t, b, "kept", TopicConfig{Flush: FlushSync})
	p := producerT(t, b, nil)
	produceN(t, p, "gone", "g", 10)
	produceN(t, p, "kept", "k", 10)
	if err := b.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	kill(t, b, fs)
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, faultOpts(fs))
	if _, err := b.DescribeTopic("gone"); err == nil {
		t.Fatal("the deleted topic is back after a power cut")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "gone-*")); len(left) != 0 {
		t.Fatalf("directories of the deleted topic after the open: %v", left)
	}
	c := consumerT(t, b, nil)
	_ = c.Assign(Assignment{Topic: "kept", Start: AtEarliest()})
	for i, r := range pollN(t, c, 10) {
		if r.Offset != int64(i) || string(r.Value) != string(value("k", i)) {
			t.Fatalf("kept record %d after the power cut: offset %d %q", i, r.Offset, r.Value)
		}
	}
	createTopicT(t, b, "gone", TopicConfig{Partitions: 2})
	ti, err := b.DescribeTopic("gone")
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range ti.Partitions {
		if pi.HighWatermark != 0 || pi.LogStartOffset != 0 {
			t.Fatalf("the topic created again holds %+v, want an empty partition", pi)
		}
	}
}
