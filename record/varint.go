package record

// Kafka's varints are protobuf-style base-128 with zigzag sign folding:
// varint for int32 fields (at most 5 bytes), varlong for int64 (at most 10).
// The decoders are strict where Java's ByteUtils is lax: a fifth varint byte
// with bits beyond 32, or a tenth varlong byte beyond 64, is malformed
// rather than silently truncated, so one value has one encoding and a
// re-encoded batch is byte-identical.

// readVarint decodes a zigzag varint from the front of b and returns the
// value and the number of bytes used; n == 0 means b is short or the
// encoding is malformed.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	var u uint32
	for i := 0; i < 5 && i < len(b); i++ {
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, 0
}

// readVarlong is readVarint for int64 fields.
func readVarlong(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint64(b[0])
		return int64(u>>1) ^ -int64(u&1), 1
	}
	var u uint64
	for i := 0; i < 10 && i < len(b); i++ {
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, 0
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0
}

func appendVarint(b []byte, v int32) []byte {
	return appendUvarint(b, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendVarlong(b []byte, v int64) []byte {
	return appendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func appendUvarint(b []byte, u uint64) []byte {
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func sizeVarint(v int32) int { return sizeUvarint(uint64(uint32(v<<1) ^ uint32(v>>31))) }

func sizeVarlong(v int64) int { return sizeUvarint(uint64(v<<1) ^ uint64(v>>63)) }

func sizeUvarint(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
