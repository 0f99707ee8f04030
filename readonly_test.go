package folio

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs/faultfs"
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
		// Every change through the file layer is seen as it happens (no
		// sleep for a modification time to move); dirState catches what
		// bypasses it (file times).
		fsys := faultfs.New()
		var changesMu sync.Mutex
		var changes []string
		fsys.SetHook(func(op faultfs.Op) error {
			switch op.Kind {
			case faultfs.OpOpen:
				return nil
			}
			changesMu.Lock()
			changes = append(changes, op.String())
			changesMu.Unlock()
			return nil
		})
		ro, err := OpenReadOnly(dir, faultOpts(fsys))
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
				_, err := ro.AppendBatch(context.Background(), "t", 0, bt)
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
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		changesMu.Lock()
		if len(changes) != 0 {
			t.Errorf("a read-only broker changed files: %v", changes)
		}
		changesMu.Unlock()
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

// TestReadOnlyRefresh: a read-only Broker follows a live writer through
// Refresh: new records wake a waiting consumer, new topics appear, deleted
// ones go.
func TestReadOnlyRefresh(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir, nil)
	createTopicT(t, w, "t", TopicConfig{Flush: FlushNone})
	p := producerT(t, w, nil)
	produceN(t, p, "t", "a", 10)

	ro, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, err := ro.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Assign(Assignment{Topic: "t"})
	pollN(t, c, 10)

	got := make(chan []Record, 1)
	go func() {
		recs, err := c.Poll(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- recs
	}()
	waitParked(t, ro, "t", 0, 1)
	produceN(t, p, "t", "b", 5)
	createTopicT(t, w, "u", TopicConfig{Partitions: 2})
	// The read-only log learns of the writer's records only at a Refresh:
	// its high watermark has not moved, so nothing woke the Poll.
	if l, err := partLog(ro, "t", 0); err != nil || l.HighWatermark() != 10 {
		t.Fatalf("a read-only log moved without a Refresh: %v", err)
	}
	select {
	case <-got:
		t.Fatal("a read-only consumer saw another process's records without a Refresh")
	default:
	}
	if err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	select {
	case recs := <-got:
		if len(recs) != 5 || recs[0].Offset != 10 || !bytes.Equal(recs[4].Value, value("b", 4)) {
			t.Fatalf("after Refresh: %d records from %d", len(recs), recs[0].Offset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Refresh did not wake the waiting consumer")
	}
	if ti, err := ro.DescribeTopic("u"); err != nil || len(ti.Partitions) != 2 {
		t.Fatalf("new topic after Refresh: %+v, %v", ti, err)
	}

	if err := w.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.DescribeTopic("t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("deleted topic after Refresh: %v", err)
	}
	if _, err := c.Poll(context.Background()); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Poll of a topic deleted by the writer: %v", err)
	}
	// A writable Broker's Refresh does nothing.
	if err := w.Refresh(); err != nil {
		t.Fatal(err)
	}
}
