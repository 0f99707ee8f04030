package readpath

import "sync/atomic"

// The package keeps process-wide counters rather than per-Source ones
// because the caps they feed (open files, vm.max_map_count) are per process.
var (
	openFiles     atomic.Int64 // files owned by Sources whose last reference is not yet dropped
	liveMappings  atomic.Int64 // mappings not yet unmapped
	mappedBytes   atomic.Int64 // their total length
	sendfileBytes atomic.Int64 // bytes sent by positional sendfile
	copiedBytes   atomic.Int64 // bytes written by the copying paths
)

// Counters is a snapshot of the package's process-wide counters.
type Counters struct {
	// OpenFiles counts files owned by Sources: from a successful Open until
	// the Source is closed and its last View released.
	OpenFiles int64
	// Mappings counts live mappings; each holds one map area (see
	// vm.max_map_count) until its last View is released and its Source has
	// closed or moved on to a larger mapping.
	Mappings int64
	// MappedBytes is the total length of the live mappings: address space,
	// not memory, since only pages that are read become resident.
	MappedBytes int64
	// SendfileBytes counts bytes sent with positional sendfile, since start.
	SendfileBytes int64
	// CopiedBytes counts bytes handed to a writer through user space (pread
	// copies and writes from mapped memory), since start.
	CopiedBytes int64
}

// ReadCounters returns the current counters. The fields are read one at a
// time, so a snapshot taken under concurrent activity is not atomic as a whole.
func ReadCounters() Counters {
	return Counters{
		OpenFiles:     openFiles.Load(),
		Mappings:      liveMappings.Load(),
		MappedBytes:   mappedBytes.Load(),
		SendfileBytes: sendfileBytes.Load(),
		CopiedBytes:   copiedBytes.Load(),
	}
}

// Stats returns the two counters the log's resource caps need: open files
// and live mappings held by this package, process-wide.
func Stats() (openFiles, mappings int64) {
	c := ReadCounters()
	return c.OpenFiles, c.Mappings
}
