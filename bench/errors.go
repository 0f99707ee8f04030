package main

import "errors"

var (
	// ErrUsage marks a bad command line: an unknown suite, conflicting
	// modes, a value out of range. The message names the flag.
	ErrUsage = errors.New("bench: usage")
	// ErrReport marks a table built inconsistently (a row whose width does
	// not match its header); it is a bug in a suite, never a measurement.
	ErrReport = errors.New("bench: inconsistent report")
	// ErrNoCacheControl means the platform offers no unprivileged way to
	// evict or inspect the page cache (posix_fadvise, mincore): cold-cache
	// runs cannot be made or verified there.
	ErrNoCacheControl = errors.New("bench: page cache control unsupported on this platform")
	// ErrCacheState means a file did not reach the cache state a run asked
	// for (for example still resident after an eviction on tmpfs); the run
	// is reported with the residency it really had, never as if it were cold.
	ErrCacheState = errors.New("bench: cache state not reached")
	// ErrChild marks a failure of the reading child process or of its
	// control protocol.
	ErrChild = errors.New("bench: reader child")
	// ErrMismatch means the bytes a consumer saw differ from what was
	// written: a benchmark that reads the wrong bytes measures nothing.
	ErrMismatch = errors.New("bench: data mismatch")
)
