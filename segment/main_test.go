package segment

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutines; this keeps it that way (readers in the
// tests stop before the tests return).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
