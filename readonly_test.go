package folio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
)

// dirState is every file's size and modification time under a directory.
func dirState(t *testing.T, dir string) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = [2]int64{fi.Size(), fi.ModTime().UnixNano()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, nil)
	createTopicT(t, w, "t", TopicConfig{Partitions: 2, SegmentBytes: 4096})
	p := producerT(t, w, nil)
	produceN(t, p, "t", "ro", 200)
	for _, crash := range []bool{false, true} {
		if crash {
			// Beside a live writer that has not shut down: no marker, and
			// the read-only Broker must not recover (write) anything.
			w = openT(t, dir, nil)
			p = producerT(t, w, nil)
			produceN(t, p, "t", "live", 10)
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		before := dirState(t, dir)
		ro, err := OpenReadOnly(dir, nil)
		if err != nil {
			t.Fatalf("OpenReadOnly (live writer %v): %v", crash, err)
		}
		if !ro.ReadOnly() {
			t.Fatal("ReadOnly() is false")
		}
		ti, err := ro.DescribeTopic("t")
		if err != nil {
			t.Fatal(err)
		}
		total := ti.Partitions[0].HighWatermark + ti.Partitions[1].HighWatermark
		want := int64(200)
		if crash {
			want = 210
		}
		if total != want {
			t.Fatalf("read-only broker sees %d records, want %d", total, want)
		}
		c, err := ro.NewConsumer(nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Assign(Assignment{Topic: "t", Partition: 0}, Assignment{Topic: "t", Partition: 1})
		if recs := pollN(t, c, int(want)); len(recs) != int(want) {
			t.Fatalf("read %d", len(recs))
		}
		for name, err := range map[string]error{
			"CreateTopic":   func() error { _, err := ro.CreateTopic("u", TopicConfig{}); return err }(),
			"DeleteTopic":   ro.DeleteTopic("t"),
			"AddPartitions": func() error { _, err := ro.AddPartitions("t", 3); return err }(),
			"NewProducer":   func() error { _, err := ro.NewProducer(nil); return err }(),
			"AppendBatch": func() error {
				bld, _ := record.NewBuilder(nil)
				_ = bld.Append(record.Record{Value: []byte("x")})
				bt, _ := bld.Build(nil)
				_, err := ro.AppendBatch("t", 0, bt)
				return err
			}(),
			"DeleteRecordsBefore": ro.DeleteRecordsBefore("t", 0, 1),
			"Checkpoint":          ro.Checkpoint(),
			"EnforceRetention":    func() error { _, err := ro.EnforceRetention(); return err }(),
		} {
			if !errors.Is(err, ErrReadOnly) {
				t.Errorf("%s on a read-only broker: %v, want ErrReadOnly", name, err)
			}
		}
		time.Sleep(5 * time.Millisecond) // let a modification time move, were anything written
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		after := dirState(t, dir)
		for path, st := range before {
			if after[path] != st {
				t.Errorf("%s changed: %v -> %v", path, st, after[path])
			}
		}
		if len(after) != len(before) {
			t.Errorf("%d entries before, %d after", len(before), len(after))
		}
	}
	if _, err := OpenReadOnly(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly of a missing directory: %v", err)
	}
}

// TestOpenReadOnlyBesideCreate: a live writer's CreateTopic makes the
// partition directories before the catalog names them. A read-only open in
// between must neither fail nor remove them (a writable open would, as
// leftovers of a crashed create).
func TestOpenReadOnlyBesideCreate(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, nil)
	createTopicT(t, w, "t", TopicConfig{})
	inFlight := filepath.Join(dir, "newtopic-0")
	if err := os.Mkdir(inFlight, 0o755); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatalf("OpenReadOnly beside a create in progress: %v", err)
	}
	if topics, _ := ro.Topics(); len(topics) != 1 || topics[0].Name != "t" {
		t.Fatalf("read-only topics %+v", topics)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(inFlight); err != nil {
		t.Fatalf("the writer's new partition directory is gone: %v", err)
	}
}
