package topic

import (
	"flag"
	"math/rand/v2"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0: a random one); each test logs the seed it used")

// testSeed returns the seed for one randomized test and logs it, so that a
// failure can be replayed with -seed.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}
