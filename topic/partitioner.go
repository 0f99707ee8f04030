package topic

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
)

// murmur2Seed is the seed of Kafka's Utils.murmur2.
const murmur2Seed uint32 = 0x9747b28c

// Murmur2 is the 32-bit MurmurHash2 of data as Kafka computes it
// (Utils.murmur2: seed 0x9747b28c, little-endian 4-byte blocks), returned
// as the Java int Kafka sees.
func Murmur2(data []byte) int32 {
	const m uint32 = 0x5bd1e995
	const shift = 24
	h := murmur2Seed ^ uint32(len(data))
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= m
		k ^= k >> shift
		k *= m
		h = h*m ^ k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is the partition Kafka's producers put a keyed record in:
// the murmur2 hash of the key with its sign bit cleared (Utils.toPositive),
// modulo the partition count. An empty key is a key and is hashed; whether
// a nil key means "no key" is for the caller (Partitioner treats it so).
func KeyPartition(key []byte, n int32) (int32, error) {
	if n < 1 {
		return 0, fmt.Errorf("%w: %d partitions", ErrNoPartitions, n)
	}
	return (Murmur2(key) & 0x7fffffff) % n, nil
}

// CheckPartition validates an explicitly chosen partition.
func CheckPartition(partition, n int32) error {
	if n < 1 {
		return fmt.Errorf("%w: %d partitions", ErrNoPartitions, n)
	}
	if partition < 0 || partition >= n {
		return fmt.Errorf("%w: partition %d of %d", ErrPartitionOutOfRange, partition, n)
	}
	return nil
}

// DefaultStickyBytes is Java's batch.size, the bytes of unkeyed records a
// sticky partitioner sends to one partition before it moves on.
const DefaultStickyBytes = 16 << 10

// PartitionerOptions configures a Partitioner. The zero value (and nil) is
// Kafka's default partitioner.
type PartitionerOptions struct {
	// StickyBytes is how many bytes of unkeyed records go to one partition
	// before the next unkeyed record moves to another, so unkeyed records
	// fill whole batches. Default DefaultStickyBytes; Unlimited (-1) moves
	// only on OnNewBatch.
	StickyBytes int64
	// IgnoreKeys places keyed records like unkeyed ones (Java's
	// partitioner.ignore.keys): spread, with no per-key order.
	IgnoreKeys bool
	// Seed seeds the choice of the next sticky partition, so a test can
	// replay one. 0 seeds randomly.
	Seed uint64
}

func (o *PartitionerOptions) validate() error {
	if o.StickyBytes < 0 && o.StickyBytes != Unlimited {
		return fmt.Errorf("%w: PartitionerOptions.StickyBytes %d, want a positive size or Unlimited (-1)", ErrInvalidConfig, o.StickyBytes)
	}
	return nil
}

// Partitioner chooses partitions for one topic's records as Kafka's default
// producer partitioner does: a keyed record goes where KeyPartition puts it,
// so every Kafka client agrees on a key's partition; unkeyed records stick
// to one randomly chosen partition until StickyBytes of them went there or
// OnNewBatch says its batch is full, then move to another. It is safe for
// concurrent use. Records with an explicit partition bypass it
// (CheckPartition).
type Partitioner struct {
	stickyBytes int64
	ignoreKeys  bool

	stickyMu   sync.Mutex // guards sticky, stickySent, rng
	sticky     int32      // the partition unkeyed records go to; -1 before the first
	stickySent int64      // bytes of unkeyed records sent to sticky
	rng        *rand.Rand // picks the next sticky partition
}

// NewPartitioner returns a Partitioner; nil opts means defaults.
func NewPartitioner(opts *PartitionerOptions) (*Partitioner, error) {
	var o PartitionerOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.StickyBytes == 0 {
		o.StickyBytes = DefaultStickyBytes
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Partitioner{
		stickyBytes: o.StickyBytes,
		ignoreKeys:  o.IgnoreKeys,
		sticky:      -1,
		rng:         rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}, nil
}

// Partition returns the partition, in [0, n), for a record with key (nil:
// unkeyed) whose encoded size is size bytes (it only counts toward
// StickyBytes). n may change between calls, as partitions are added.
func (p *Partitioner) Partition(key []byte, size int, n int32) (int32, error) {
	if key != nil && !p.ignoreKeys {
		return KeyPartition(key, n)
	}
	if n < 1 {
		return 0, fmt.Errorf("%w: %d partitions", ErrNoPartitions, n)
	}
	p.stickyMu.Lock()
	defer p.stickyMu.Unlock()
	full := p.stickyBytes != Unlimited && p.stickySent >= p.stickyBytes
	if p.sticky < 0 || p.sticky >= n || full {
		p.nextStickyLocked(n)
	}
	p.stickySent += int64(size)
	return p.sticky, nil
}

// OnNewBatch tells the partitioner that the batch for partition prev is
// full (or was sent early), so unkeyed records move to another partition.
// It only moves if prev is still the sticky partition: when several
// goroutines see the same full batch, one move happens, not one each.
func (p *Partitioner) OnNewBatch(prev, n int32) {
	if n < 1 {
		return
	}
	p.stickyMu.Lock()
	defer p.stickyMu.Unlock()
	if p.sticky == prev || p.sticky >= n {
		p.nextStickyLocked(n)
	}
}

// Sticky returns the partition unkeyed records currently go to, or -1 before
// the first unkeyed record.
func (p *Partitioner) Sticky() int32 {
	p.stickyMu.Lock()
	defer p.stickyMu.Unlock()
	return p.sticky
}

// nextStickyLocked picks a new sticky partition uniformly among the n-1
// others (staying put makes no progress toward spreading), or 0 if n is 1.
func (p *Partitioner) nextStickyLocked(n int32) {
	prev := p.sticky
	p.stickySent = 0
	if prev < 0 || prev >= n {
		p.sticky = p.rng.Int32N(n)
		return
	}
	if n == 1 {
		p.sticky = 0
		return
	}
	next := p.rng.Int32N(n - 1)
	if next >= prev {
		next++
	}
	p.sticky = next
}
