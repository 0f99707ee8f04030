package record

import (
	"testing"

	"go.uber.org/goleak"
)

// Codec pools must not leave goroutines behind (zstd can run some when
// misconfigured).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
