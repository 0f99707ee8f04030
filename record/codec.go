package record

// Codec is a batch compression codec, attribute bits 0-2.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown"
}

// valid reports whether c is one of the five codecs Kafka defines; the
// attribute bits can also hold 5-7, which no client writes.
func (c Codec) valid() bool { return c >= CodecNone && c <= CodecZstd }
