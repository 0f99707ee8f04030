//go:build !unix

package folio

import "time"

// processUsage reports nothing where getrusage is missing; the benchmarks
// then report wall-clock rates only.
func processUsage() (cpu time.Duration, minflt int64, ok bool) { return 0, 0, false }
