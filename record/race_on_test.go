//go:build race

package record

// The race detector makes sync.Pool drop a share of what is put back, so
// tests that measure pooling loosen their bounds.
const raceEnabled = true
