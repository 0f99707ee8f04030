package main

import (
	"os"
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
	}
	goleak.VerifyTestMain(m)
}
