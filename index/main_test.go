package index

import (
	"flag"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var seedFlag = flag.Uint64("index.seed", 0, "seed for randomized tests (0: pick one and log it)")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRand returns a generator seeded from -index.seed or the clock, and logs
// the seed so a failure can be replayed with -index.seed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -index.seed=%d)", seed, seed)
	return newRandFrom(seed)
}

// newRandFrom derives a generator (for example one per goroutine) from a
// seed drawn from a logged one.
func newRandFrom(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func tempPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(t.TempDir(), name)
}

func openOffset(t testing.TB, path string, base int64, writable bool, opts *Options) *OffsetIndex {
	t.Helper()
	x, err := OpenOffset(nil, path, base, writable, opts)
	if err != nil {
		t.Fatalf("OpenOffset(%s, writable=%v): %v", path, writable, err)
	}
	return x
}

func openTime(t testing.TB, path string, base int64, writable bool, opts *Options) *TimeIndex {
	t.Helper()
	x, err := OpenTime(nil, path, base, writable, opts)
	if err != nil {
		t.Fatalf("OpenTime(%s, writable=%v): %v", path, writable, err)
	}
	return x
}

func mustNil(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// closeQuietly is for t.Cleanup: an index a test already closed returns
// ErrClosed, which is expected there.
func closeQuietly(c interface{ Close() error }) func() {
	return func() { _ = c.Close() }
}
