package log

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
)

// TestCompactKeepsMaxTimestamp: a cleaned segment keeps the max timestamp
// of what it replaced, even when every record of it went and only its last
// batch stays, empty. With -1 (an empty batch's "no timestamp") such a
// segment passed the MinCompactionLag check whatever the clock said and
// was never deleted by time retention.
func TestCompactKeepsMaxTimestamp(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	opts := compactOpts(t, 300, nil)
	opts.Now = func() time.Time { return now }
	opts.FlushPolicy = FlushNone
	l, err := Open(nil, t.TempDir(), opts, State{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := newKVModel()
	ts := map[int64]int64{} // offset -> its record's timestamp
	for i := range 40 {
		// Two keys, so most segments lose every record; the timestamps
		// rise, so a segment's max is its last record's.
		t0 := now.Add(-3*time.Hour + time.Duration(i)*time.Minute).UnixMilli()
		ts[int64(i)] = t0
		m.appendKV(t, l, []kv{{fmt.Sprint("k", i%2), make([]byte, 60)}}, t0, noProducer, record.CodecNone)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	res, err := l.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.EmptyBatches == 0 {
		t.Fatalf("compaction left no empty batch: %+v; the test needs one", res)
	}
	var entries []*segEntry
	l.snap.Load().segs.Ascend(func(e *segEntry) bool {
		entries = append(entries, e)
		return true
	})
	for i, e := range entries[:len(entries)-1] {
		want := int64(-1)
		for off := e.base; off < entries[i+1].base; off++ {
			want = max(want, ts[off])
		}
		got, err := l.segMaxTimestamp(e)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("segment %d (offsets %d to %d) after cleaning: max timestamp %d, want %d", e.base, e.base, entries[i+1].base-1, got, want)
		}
	}

	// Time retention deletes the cleaned segments once they are old.
	l.SetRetention(0, time.Hour)
	n, err := l.EnforceRetention(now)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("time retention deleted no cleaned segment three hours old")
	}
}
