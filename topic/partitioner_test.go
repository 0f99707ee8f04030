package topic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Known Java values of Utils.murmur2: Kafka's UtilsTest.testMurmur2 and the
// values Akka's Murmur2Spec took from Kafka's implementation.
func TestMurmur2JavaVectors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
		{"1", -1993445489},
		{"12", 126087238},
		{"123", -267702483},
		{"1234", -1614185708},
		{"12345", -1188365604},
	} {
		if got := Murmur2([]byte(tc.in)); got != tc.want {
			t.Errorf("Murmur2(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestKeyPartitionMatchesFranzGo: keys land where franz-go's Kafka-compatible
// partitioner (and so the Java client) puts them, for random keys of every
// length class, the empty key included, and many partition counts.
func TestKeyPartitionMatchesFranzGo(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 3))
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	keys := [][]byte{{}, {0}, {0xff, 0xff, 0xff, 0xff}}
	for i := 0; i < 20000; i++ {
		k := make([]byte, r.IntN(40))
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		n := 1 + r.Int32N(1000)
		if r.IntN(4) == 0 {
			n = 1 + r.Int32N(MaxPartitions)
		}
		got, err := KeyPartition(k, n)
		if err != nil {
			t.Fatal(err)
		}
		want := kp.Partition(&kgo.Record{Key: k}, int(n))
		if int(got) != want {
			t.Fatalf("key %x, %d partitions: got %d, franz-go %d", k, n, got, want)
		}
	}
}

func TestKeyPartitionErrors(t *testing.T) {
	if _, err := KeyPartition([]byte("k"), 0); !errors.Is(err, ErrNoPartitions) {
		t.Fatalf("0 partitions: %v", err)
	}
	for _, tc := range []struct {
		p, n int32
		want error
	}{{0, 1, nil}, {4, 5, nil}, {5, 5, ErrPartitionOutOfRange}, {-1, 5, ErrPartitionOutOfRange}, {0, 0, ErrNoPartitions}} {
		if err := CheckPartition(tc.p, tc.n); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("CheckPartition(%d, %d) = %v, want %v", tc.p, tc.n, err, tc.want)
		}
	}
	p, _ := NewPartitioner(nil)
	if _, err := p.Partition(nil, 10, 0); !errors.Is(err, ErrNoPartitions) {
		t.Fatalf("unkeyed, 0 partitions: %v", err)
	}
	if _, err := NewPartitioner(&PartitionerOptions{StickyBytes: -7}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("StickyBytes -7: %v", err)
	}
}

func TestPartitionerKeyed(t *testing.T) {
	p, err := NewPartitioner(&PartitionerOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// An empty non-nil key is a key: hashed, the same every time.
	want, _ := KeyPartition([]byte{}, 16)
	for i := 0; i < 100; i++ {
		if got, _ := p.Partition([]byte{}, 100, 16); got != want {
			t.Fatalf("empty key went to %d, want %d", got, want)
		}
	}
	if p.Sticky() != -1 {
		t.Fatalf("keyed records moved the sticky partition to %d", p.Sticky())
	}
	// Keys spread: 16 partitions, 1000 keys: every partition gets some.
	seen := map[int32]bool{}
	for i := 0; i < 1000; i++ {
		k := []byte{byte(i), byte(i >> 8)}
		got, _ := p.Partition(k, 1, 16)
		seen[got] = true
	}
	if len(seen) != 16 {
		t.Fatalf("1000 keys reached %d of 16 partitions", len(seen))
	}
}

func TestPartitionerSticky(t *testing.T) {
	seed := testSeed(t)
	p, err := NewPartitioner(&PartitionerOptions{StickyBytes: 1000, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	first, _ := p.Partition(nil, 100, n)
	// 1000 bytes go to one partition: records 1-10 of 100 bytes each.
	for i := 2; i <= 10; i++ {
		if got, _ := p.Partition(nil, 100, n); got != first {
			t.Fatalf("record %d moved from %d to %d before the batch was full", i, first, got)
		}
	}
	second, _ := p.Partition(nil, 100, n)
	if second == first {
		t.Fatalf("stayed on %d after a full batch", first)
	}
	// OnNewBatch for a partition that is no longer sticky changes nothing.
	p.OnNewBatch(first, n)
	if p.Sticky() != second {
		t.Fatalf("OnNewBatch(%d) moved the sticky partition off %d", first, second)
	}
	p.OnNewBatch(second, n)
	third := p.Sticky()
	if third == second || third < 0 || third >= n {
		t.Fatalf("OnNewBatch(%d) left sticky at %d", second, third)
	}
	if got, _ := p.Partition(nil, 1, n); got != third {
		t.Fatalf("next record went to %d, want %d", got, third)
	}
	// Shrinking the count below the sticky partition moves it into range.
	for p.Sticky() < 2 {
		p.OnNewBatch(p.Sticky(), n)
	}
	if got, _ := p.Partition(nil, 1, 2); got < 0 || got >= 2 {
		t.Fatalf("with 2 partitions got %d", got)
	}
	// Over many batches every partition is used.
	used := map[int32]int{}
	for i := 0; i < 2000; i++ {
		got, _ := p.Partition(nil, 1000, n)
		used[got]++
	}
	if len(used) != n {
		t.Fatalf("2000 full batches used %d of %d partitions: %v", len(used), n, used)
	}
	// One partition: the only choice, and never an error.
	for i := 0; i < 10; i++ {
		if got, err := p.Partition(nil, 5000, 1); got != 0 || err != nil {
			t.Fatalf("1 partition: %d, %v", got, err)
		}
	}
	p.OnNewBatch(0, 1)
	if p.Sticky() != 0 {
		t.Fatalf("OnNewBatch with 1 partition: sticky %d", p.Sticky())
	}
}

func TestPartitionerStickyUnlimitedAndIgnoreKeys(t *testing.T) {
	seed := testSeed(t)
	p, _ := NewPartitioner(&PartitionerOptions{StickyBytes: Unlimited, IgnoreKeys: true, Seed: seed})
	first, _ := p.Partition([]byte("key"), 1<<30, 4)
	for i := 0; i < 100; i++ {
		if got, _ := p.Partition([]byte{byte(i)}, 1<<30, 4); got != first {
			t.Fatalf("Unlimited sticky moved without OnNewBatch: %d -> %d", first, got)
		}
	}
	p.OnNewBatch(first, 4)
	if got, _ := p.Partition(nil, 1, 4); got == first {
		t.Fatal("OnNewBatch did not move")
	}
}

// TestPartitionerSeedReplays: a seed fixes the sequence of sticky choices.
func TestPartitionerSeedReplays(t *testing.T) {
	run := func() []int32 {
		p, _ := NewPartitioner(&PartitionerOptions{StickyBytes: 10, Seed: 42})
		var out []int32
		for i := 0; i < 100; i++ {
			got, _ := p.Partition(nil, 10, 50)
			out = append(out, got)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seeded runs differ at %d: %d vs %d", i, a[i], b[i])
		}
	}
}

func TestPartitionerConcurrent(t *testing.T) {
	p, _ := NewPartitioner(&PartitionerOptions{StickyBytes: 64})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				var key []byte
				if i%3 == 0 {
					key = []byte{byte(g), byte(i)}
				}
				got, err := p.Partition(key, 16, 12)
				if err != nil || got < 0 || got >= 12 {
					t.Errorf("Partition = %d, %v", got, err)
					return
				}
				if i%50 == 0 {
					p.OnNewBatch(got, 12)
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkMurmur2Partition(b *testing.B) {
	for _, size := range []int{8, 36, 256} {
		key := make([]byte, size)
		for i := range key {
			key[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("key=%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			var sink int32
			for b.Loop() {
				p, _ := KeyPartition(key, 64)
				sink += p
			}
			_ = sink
		})
	}
}

func BenchmarkStickyPartition(b *testing.B) {
	p, _ := NewPartitioner(nil)
	for b.Loop() {
		_, _ = p.Partition(nil, 100, 64)
	}
}
