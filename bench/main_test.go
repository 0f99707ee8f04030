package main

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary play the reading child: the read-paths
// suite re-executes os.Executable(), which under `go test` is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if addr, ok := childAddr(os.Args[1:]); ok {
			os.Exit(childMain(addr, os.Stderr))
		}
		if kind, dir, ok := serverChildArgs(os.Args[1:]); ok {
			os.Exit(serverChildMain(kind, dir, os.Stdout, os.Stdin, os.Stderr))
		}
	}
	goleak.VerifyTestMain(m)
}

// seedEnv replays a randomized test: FOLIO_BENCH_SEED=<seed> go test ...
const seedEnv = "FOLIO_BENCH_SEED"

// testSeed returns the seed from seedEnv, or a fresh one, and logs it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedEnv, seed)
	return seed
}
