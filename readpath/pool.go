package readpath

import (
	"math/bits"
	"sync"
)

// Buffers for pread are pooled in power-of-two classes so that a 1 MiB
// fetch does not allocate 1 MiB per call. Views larger than the largest
// class get a buffer of their own: pooling those would pin large blocks
// that few reads need.
const (
	minBufShift = 12 // 4 KiB
	maxBufShift = 24 // 16 MiB
	// copyChunk bounds the buffer the copying WriteTo path reads through, so
	// a large view does not need a buffer of its own size.
	copyChunk = 1 << 20
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

// bufClass returns the pool index for a buffer of n bytes, or -1 when n is
// larger than the largest class.
func bufClass(n int) int {
	if n <= 1<<minBufShift {
		return 0
	}
	shift := bits.Len(uint(n - 1))
	if shift > maxBufShift {
		return -1
	}
	return shift - minBufShift
}

// getBuf returns a buffer of length n; its capacity is the class size.
func getBuf(n int) *[]byte {
	c := bufClass(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<(c+minBufShift))
	return &b
}

// putBuf returns b to its class; buffers that did not come from a class
// (oversized ones) are left to the garbage collector.
func putBuf(b *[]byte) {
	c := bufClass(cap(*b))
	if c < 0 || cap(*b) != 1<<(c+minBufShift) {
		return
	}
	*b = (*b)[:0]
	bufPools[c].Put(b)
}
