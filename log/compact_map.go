package log

import (
	"crypto/sha256"
	"encoding/binary"
)

// Sizes of the cleaner's key-to-offset map, Kafka's SkimpyOffsetMap: each
// slot is a 16-byte hash of a key and the 8-byte offset of the key's latest
// record.
const (
	keyHashSize   = 16
	mapEntrySize  = keyHashSize + 8
	maxLoadFactor = 0.95
)

// keyHash is the map's key: the first 16 bytes of the key's SHA-256.
type keyHash [keyHashSize]byte

// hashKey hashes a record key. A collision between two keys would make the
// cleaner drop the older key's latest record as if the other key had
// superseded it, and producers choose keys, so the hash must resist
// deliberate collisions: a truncated SHA-256 does (Kafka uses MD5, which no
// longer does), and with the CPU's SHA extensions it costs about what MD5
// does.
func hashKey(key []byte) keyHash {
	sum := sha256.Sum256(key)
	return keyHash(sum[:keyHashSize])
}

// offsetMap maps key hashes to the offset of the key's latest record, in an
// open-addressing table of a fixed number of slots allocated once (the
// memory budget), probed linearly. It holds at most limit entries, which
// keeps a free slot for every probe sequence to end at. The offset is stored
// plus one, so that an all-zero slot is free.
type offsetMap struct {
	slots   []byte
	n       uint64 // number of slots
	limit   int    // most entries it may hold (the load factor's share)
	entries int
}

// newOffsetMap returns a map of n slots that holds up to n*loadFactor
// entries (at least one when n >= 2), n*24 bytes in all.
func newOffsetMap(n int, loadFactor float64) *offsetMap {
	n = max(n, 2)
	limit := min(int(float64(n)*loadFactor), n-1)
	return &offsetMap{slots: make([]byte, n*mapEntrySize), n: uint64(n), limit: max(limit, 1)}
}

// room reports whether k more entries surely fit.
func (m *offsetMap) room(k int) bool { return m.entries+k <= m.limit }

// bytes is the map's memory.
func (m *offsetMap) bytes() int { return len(m.slots) }

// find returns the slot of h, or the free slot where it would go.
func (m *offsetMap) find(h *keyHash) (slot []byte, found bool) {
	i := binary.LittleEndian.Uint64(h[:8]) % m.n
	for {
		s := m.slots[i*mapEntrySize : (i+1)*mapEntrySize]
		if binary.BigEndian.Uint64(s[keyHashSize:]) == 0 {
			return s, false
		}
		if [keyHashSize]byte(s[:keyHashSize]) == *h {
			return s, true
		}
		i++
		if i == m.n {
			i = 0
		}
	}
}

// put records offset as h's latest. The caller checked room (put of a new
// key into a map at its limit is refused, returning false).
func (m *offsetMap) put(h *keyHash, offset int64) bool {
	s, found := m.find(h)
	if !found {
		if m.entries >= m.limit {
			return false
		}
		copy(s, h[:])
		m.entries++
	}
	binary.BigEndian.PutUint64(s[keyHashSize:], uint64(offset)+1)
	return true
}

// get returns the latest offset recorded for h, or -1.
func (m *offsetMap) get(h *keyHash) int64 {
	s, found := m.find(h)
	if !found {
		return -1
	}
	return int64(binary.BigEndian.Uint64(s[keyHashSize:])) - 1
}
