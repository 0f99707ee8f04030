package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frames are read here rather than through lz4.Reader so that every
// block decodes straight into the capped output buffer: lz4.Reader stages
// each block in a buffer of the frame's declared block size (up to 4 MiB,
// whatever the content), which a 20-byte frame could make it allocate under
// a 1 MiB cap. Blocks are decoded by pierrec/lz4's UncompressBlock.
//
// Frame layout (lz4_Frame_format.md): magic, FLG, BD, optional content
// size, optional dictionary id, header checksum; blocks, each a
// little-endian size (high bit: stored uncompressed), data and an optional
// checksum; a zero end mark; an optional content checksum. Concatenated
// frames are read one after another, as lz4.Reader does.

const lz4FrameMagic = 0x184d2204

var errLZ4 = errors.New("malformed lz4 frame")

func lz4Corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errLZ4, fmt.Sprintf(format, args...))
}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	for len(src) > 0 {
		var err error
		if dst, src, err = decodeLZ4Frame(dst, src, limit); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func decodeLZ4Frame(dst, src []byte, limit int) ([]byte, []byte, error) {
	if len(src) < 7 {
		return dst, nil, lz4Corrupt("%d bytes, short of a frame header", len(src))
	}
	if m := binary.LittleEndian.Uint32(src); m != lz4FrameMagic {
		return dst, nil, lz4Corrupt("magic %#08x", m)
	}
	flg, bd := src[4], src[5]
	switch {
	case flg>>6 != 1:
		return dst, nil, lz4Corrupt("version %d", flg>>6)
	case flg&0x02 != 0 || bd&0x8f != 0:
		return dst, nil, lz4Corrupt("reserved bits set in FLG %#02x BD %#02x", flg, bd)
	case flg&0x01 != 0:
		return dst, nil, lz4Corrupt("dictionary frames are not used by Kafka")
	case flg&0x20 == 0:
		// Kafka's Java client refuses linked blocks too, so no Kafka
		// producer writes them.
		return dst, nil, lz4Corrupt("dependent blocks are not used by Kafka")
	}
	sizeIndex := int(bd>>4) & 0x07
	if sizeIndex < 4 {
		return dst, nil, lz4Corrupt("block size index %d", sizeIndex)
	}
	blockMax := 1 << (8 + 2*sizeIndex)
	blockSums, contentSum, hasSize := flg&0x10 != 0, flg&0x04 != 0, flg&0x08 != 0

	p := 6
	var contentSize uint64
	if hasSize {
		if len(src) < p+8+1 {
			return dst, nil, lz4Corrupt("short frame header")
		}
		contentSize = binary.LittleEndian.Uint64(src[p:])
		if contentSize > uint64(limit-len(dst)) {
			return dst, nil, errCodecTooLarge
		}
		p += 8
	}
	if hc := byte(xxh32(src[4:p]) >> 8); hc != src[p] {
		return dst, nil, lz4Corrupt("header checksum %#02x, computed %#02x", src[p], hc)
	}
	p++

	start := len(dst)
	for {
		if len(src)-p < 4 {
			return dst, nil, lz4Corrupt("frame ends without an end mark")
		}
		word := binary.LittleEndian.Uint32(src[p:])
		p += 4
		if word == 0 {
			break
		}
		stored, n := word&(1<<31) != 0, int(word&^(1<<31))
		if n > blockMax || n > len(src)-p {
			return dst, nil, lz4Corrupt("block of %d bytes, the frame allows %d and holds %d more", n, blockMax, len(src)-p)
		}
		block := src[p : p+n]
		p += n
		if blockSums {
			if len(src)-p < 4 {
				return dst, nil, lz4Corrupt("block checksum missing")
			}
			if got, want := xxh32(block), binary.LittleEndian.Uint32(src[p:]); got != want {
				return dst, nil, lz4Corrupt("block checksum %#08x, computed %#08x", want, got)
			}
			p += 4
		}
		room := limit - len(dst)
		if stored {
			if n > room {
				return dst, nil, errCodecTooLarge
			}
			dst = growCapped(dst, n, limit)
			dst = append(dst, block...)
			continue
		}
		// LZ4 expands at most 255-fold (a length byte of 255 is the
		// densest code), which keeps the window small for a tiny block in
		// a frame that declares 4 MiB blocks.
		window, capped := min(blockMax, 255*n), false
		if window > room {
			window, capped = room, true
		}
		dst = growCapped(dst, window, limit)
		k, err := lz4.UncompressBlock(block, dst[len(dst):len(dst)+window])
		if err != nil {
			if capped {
				// The block may only have needed more room than the
				// cap leaves; either way its output will not fit.
				return dst, nil, errCodecTooLarge
			}
			return dst, nil, lz4Corrupt("block: %v", err)
		}
		dst = dst[:len(dst)+k]
	}
	if contentSum {
		if len(src)-p < 4 {
			return dst, nil, lz4Corrupt("content checksum missing")
		}
		if got, want := xxh32(dst[start:]), binary.LittleEndian.Uint32(src[p:]); got != want {
			return dst, nil, lz4Corrupt("content checksum %#08x, computed %#08x", want, got)
		}
		p += 4
	}
	if hasSize && uint64(len(dst)-start) != contentSize {
		return dst, nil, lz4Corrupt("content size %d, decoded %d", contentSize, len(dst)-start)
	}
	return dst, src[p:], nil
}

// growCapped makes room for n more bytes in dst, doubling its capacity as
// append would but never past limit, so a capped output never holds more
// memory than the cap.
func growCapped(dst []byte, n, limit int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	want := max(len(dst)+n, min(max(2*cap(dst), 4<<10), limit))
	out := make([]byte, len(dst), want)
	copy(out, dst)
	return out
}

// xxh32 is XXH32 with seed 0, the checksum of LZ4 frames.
func xxh32(b []byte) uint32 {
	const (
		p1 uint32 = 2654435761
		p2 uint32 = 2246822519
		p3 uint32 = 3266489917
		p4 uint32 = 668265263
		p5 uint32 = 374761393
	)
	n := len(b)
	var seed, h uint32 // a variable, so the sums below wrap as XXH32 needs
	if n >= 16 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		for ; len(b) >= 16; b = b[16:] {
			v1 = bits.RotateLeft32(v1+binary.LittleEndian.Uint32(b)*p2, 13) * p1
			v2 = bits.RotateLeft32(v2+binary.LittleEndian.Uint32(b[4:])*p2, 13) * p1
			v3 = bits.RotateLeft32(v3+binary.LittleEndian.Uint32(b[8:])*p2, 13) * p1
			v4 = bits.RotateLeft32(v4+binary.LittleEndian.Uint32(b[12:])*p2, 13) * p1
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + p5
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
