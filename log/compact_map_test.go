package log

import (
	"fmt"
	"testing"
)

// TestOffsetMap: the map keeps each key's latest offset, tells absent keys
// apart (offset 0 included), holds exactly its limit of keys whatever the
// probing, refuses a new key beyond it but still updates known ones.
func TestOffsetMap(t *testing.T) {
	for _, tc := range []struct {
		slots int
		lf    float64
		limit int
	}{
		{2, 0.9, 1}, {16, 0.9, 14}, {100, 0.5, 50}, {1000, 0.95, 950},
	} {
		t.Run(fmt.Sprint(tc.slots, "x", tc.lf), func(t *testing.T) {
			m := newOffsetMap(tc.slots, tc.lf)
			if m.limit != tc.limit || m.bytes() != tc.slots*mapEntrySize {
				t.Fatalf("limit %d, %d bytes; want %d, %d", m.limit, m.bytes(), tc.limit, tc.slots*mapEntrySize)
			}
			for i := range tc.limit {
				h := hashKey([]byte(fmt.Sprint("key", i)))
				if !m.room(1) || !m.put(&h, int64(i)) {
					t.Fatalf("key %d of %d refused", i, tc.limit)
				}
			}
			if m.room(1) {
				t.Fatal("a full map reports room")
			}
			extra := hashKey([]byte("one too many"))
			if m.put(&extra, 5) || m.get(&extra) != -1 {
				t.Fatal("a full map took a new key")
			}
			for i := range tc.limit {
				h := hashKey([]byte(fmt.Sprint("key", i)))
				if got := m.get(&h); got != int64(i) {
					t.Fatalf("key %d: offset %d", i, got)
				}
				if !m.put(&h, int64(i)+1000) || m.get(&h) != int64(i)+1000 {
					t.Fatalf("key %d: update in a full map failed", i)
				}
			}
			for i := range 50 {
				h := hashKey([]byte(fmt.Sprint("absent", i)))
				if got := m.get(&h); got != -1 {
					t.Fatalf("absent key %d: offset %d", i, got)
				}
			}
			if m.entries != tc.limit {
				t.Fatalf("%d entries after updates, want %d", m.entries, tc.limit)
			}
		})
	}
	if a, b := hashKey([]byte("a")), hashKey([]byte("b")); a == b || hashKey([]byte("a")) != a || hashKey(nil) != hashKey([]byte{}) {
		t.Fatal("hashKey is not a function of the key bytes")
	}
}

func BenchmarkOffsetMap(b *testing.B) {
	m := newOffsetMap(1<<20, DefaultCleanerLoadFactor)
	keys := make([]keyHash, m.limit)
	for i := range keys {
		keys[i] = hashKey([]byte(fmt.Sprintf("key-%08d", i)))
	}
	b.ResetTimer()
	for i := range b.N {
		k := &keys[i%len(keys)]
		m.put(k, int64(i))
		if m.get(k) != int64(i) {
			b.Fatal("lost")
		}
	}
	b.ReportMetric(float64(mapEntrySize), "bytes/entry")
}
