//go:build !unix

package log

import "time"

// processCPU reports no CPU time where getrusage is missing; the
// benchmarks then report wall-clock rates only.
func processCPU() (time.Duration, bool) { return 0, false }
