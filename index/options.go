package index

import (
	"fmt"
	"math"
)

// DefaultMaxIndexBytes is Kafka's segment.index.bytes default: 10 MiB, which
// holds 1,310,720 offset entries (about 5 GiB of log at one entry per 4 KiB).
const DefaultMaxIndexBytes = 10 << 20

// Options tunes an index. A nil *Options means all defaults; so does a zero
// field.
type Options struct {
	// MaxIndexBytes is the length of a writable index's mapping and so its
	// capacity: MaxIndexBytes/entrySize entries (rounded down, as Kafka
	// does). Disk is not reserved for all of it: blocks are allocated in
	// steps of AllocStepEntries entries as the index fills, and a sealed
	// index is trimmed to its entries. Default DefaultMaxIndexBytes
	// (10 MiB). It must hold at least one entry and be at most 2^31-1, the
	// largest size Kafka's int32 index arithmetic allows.
	MaxIndexBytes int64
}

// AllocStepEntries is how many entries' worth of disk an index allocates
// (fallocate) each time the writer reaches the end of what it has: 64 KiB
// for the offset index, 96 KiB for the time index. Both are whole pages and
// whole entries, so a file cut short by a crash still has a size that is a
// multiple of the entry size and its zeroed tail fails the sanity check
// (see Open) instead of being read as entries.
const AllocStepEntries = 8192

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxIndexBytes == 0 {
		out.MaxIndexBytes = DefaultMaxIndexBytes
	}
	return out
}

// validate checks o (defaults already applied) for an index whose entries
// are entrySize bytes.
func (o Options) validate(entrySize int) error {
	if o.MaxIndexBytes < int64(entrySize) {
		return fmt.Errorf("index: Options.MaxIndexBytes = %d: must hold at least one %d-byte entry", o.MaxIndexBytes, entrySize)
	}
	if o.MaxIndexBytes > math.MaxInt32 {
		return fmt.Errorf("index: Options.MaxIndexBytes = %d: must be at most %d", o.MaxIndexBytes, math.MaxInt32)
	}
	return nil
}
