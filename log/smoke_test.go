package log

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(nil, dir, &Options{SegmentBytes: 4096, FlushPolicy: FlushSync}, State{})
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 100; i++ {
		f, last, err := l.Append(makeBatch(t, "x", i*5, 5, 100, 1000+i))
		if err != nil || f != i*5 || last != i*5+4 {
			t.Fatalf("append %d: %d %d %v", i, f, last, err)
		}
	}
	recs := readAll(t, l, 0)
	if len(recs) != 500 {
		t.Fatalf("got %d", len(recs))
	}
	t.Logf("%+v segs=%d", l.Checkpoint(), l.Stats().Segments)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(nil, dir, &Options{SegmentBytes: 4096}, l.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs = readAll(t, l, 0)
	if len(recs) != 500 {
		t.Fatalf("got %d", len(recs))
	}
	t.Logf("%+v %+v", l.Checkpoint(), l.Stats())
}
