package topic

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/foliolog/folio/record"
)

// CleanupPolicy is how a topic sheds old records.
type CleanupPolicy uint8

const (
	// CleanupDelete deletes whole segments past retention. The default.
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact keeps the latest record of each key.
	CleanupCompact
	// CleanupCompactDelete compacts, and deletes segments past retention.
	CleanupCompactDelete
)

var cleanupNames = []string{"delete", "compact", "compact,delete"}

func (c CleanupPolicy) String() string { return enumString(cleanupNames, c, "CleanupPolicy") }

// Deletes reports whether retention deletes segments under this policy.
func (c CleanupPolicy) Deletes() bool { return c == CleanupDelete || c == CleanupCompactDelete }

// Compacts reports whether the log is compacted under this policy.
func (c CleanupPolicy) Compacts() bool { return c == CleanupCompact || c == CleanupCompactDelete }

// ParseCleanupPolicy parses "delete", "compact" or "compact,delete" (also
// written "delete,compact", as Kafka accepts).
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	if s == "delete,compact" {
		return CleanupCompactDelete, nil
	}
	return parseEnum[CleanupPolicy](cleanupNames, s, "cleanup policy")
}

// Set implements flag.Value.
func (c *CleanupPolicy) Set(s string) error { return setEnum(c, ParseCleanupPolicy, s) }
func (c CleanupPolicy) MarshalText() ([]byte, error) {
	return marshalEnum(cleanupNames, c, "CleanupPolicy")
}
func (c *CleanupPolicy) UnmarshalText(b []byte) error { return c.Set(string(b)) }

// TimestampType is whose clock stamps a topic's records.
type TimestampType uint8

const (
	// CreateTime keeps the producer's timestamps. The default.
	CreateTime TimestampType = iota
	// LogAppendTime stamps each batch with the log's clock at append.
	LogAppendTime
)

var timestampTypeNames = []string{"CreateTime", "LogAppendTime"}

func (t TimestampType) String() string { return enumString(timestampTypeNames, t, "TimestampType") }

// ParseTimestampType parses "CreateTime" or "LogAppendTime", in any case.
func ParseTimestampType(s string) (TimestampType, error) {
	for i, n := range timestampTypeNames {
		if strings.EqualFold(s, n) {
			return TimestampType(i), nil
		}
	}
	return 0, fmt.Errorf("timestamp type %q: want one of %s", s, strings.Join(timestampTypeNames, ", "))
}

// Set implements flag.Value.
func (t *TimestampType) Set(s string) error { return setEnum(t, ParseTimestampType, s) }
func (t TimestampType) MarshalText() ([]byte, error) {
	return marshalEnum(timestampTypeNames, t, "TimestampType")
}
func (t *TimestampType) UnmarshalText(b []byte) error { return t.Set(string(b)) }

// Compression is the codec a topic stores batches with.
type Compression uint8

const (
	// CompressionProducer keeps each batch as the producer compressed it.
	// The default (Kafka's compression.type=producer).
	CompressionProducer Compression = iota
	CompressionNone
	CompressionGzip
	CompressionSnappy
	CompressionLZ4
	CompressionZstd
)

var compressionNames = []string{"producer", "none", "gzip", "snappy", "lz4", "zstd"}

func (c Compression) String() string { return enumString(compressionNames, c, "Compression") }

// Codec returns the record codec a topic recompresses batches to, and false
// for CompressionProducer, which keeps the producer's codec.
func (c Compression) Codec() (record.Codec, bool) {
	switch c {
	case CompressionNone:
		return record.CodecNone, true
	case CompressionGzip:
		return record.CodecGzip, true
	case CompressionSnappy:
		return record.CodecSnappy, true
	case CompressionLZ4:
		return record.CodecLZ4, true
	case CompressionZstd:
		return record.CodecZstd, true
	}
	return record.CodecNone, false
}

// ParseCompression parses producer, none (also Kafka's "uncompressed"),
// gzip, snappy, lz4 or zstd.
func ParseCompression(s string) (Compression, error) {
	if s == "uncompressed" {
		return CompressionNone, nil
	}
	return parseEnum[Compression](compressionNames, s, "compression")
}

// Set implements flag.Value.
func (c *Compression) Set(s string) error { return setEnum(c, ParseCompression, s) }
func (c Compression) MarshalText() ([]byte, error) {
	return marshalEnum(compressionNames, c, "Compression")
}
func (c *Compression) UnmarshalText(b []byte) error { return c.Set(string(b)) }

type enum interface{ ~uint8 }

func enumString[E enum](names []string, e E, typ string) string {
	if int(e) < len(names) {
		return names[e]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(e))
}

func parseEnum[E enum](names []string, s, what string) (E, error) {
	for i, n := range names {
		if s == n {
			return E(i), nil
		}
	}
	return 0, fmt.Errorf("%s %q: want one of %s", what, s, strings.Join(names, ", "))
}

func setEnum[E enum](e *E, parse func(string) (E, error), s string) error {
	v, err := parse(s)
	if err != nil {
		return err
	}
	*e = v
	return nil
}

func marshalEnum[E enum](names []string, e E, typ string) ([]byte, error) {
	if int(e) >= len(names) {
		return nil, fmt.Errorf("%w: %s %d is not a known value", ErrInvalidConfig, typ, uint8(e))
	}
	return []byte(names[e]), nil
}

// Byte units for ParseBytes and FormatBytes.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10},
	{"b", 1},
}

var errSyntax = errors.New("syntax")

// ParseBytes parses a non-negative byte size: an integer with an optional
// unit, case-insensitive. KiB, MiB, GiB, TiB and the one-letter k, m, g, t
// are powers of 1024; kB, MB, GB, TB are powers of 1000; b or no unit is
// bytes. "512MiB", "1g", "4096".
func ParseBytes(s string) (int64, error) {
	num, mult := s, int64(1)
	lower := strings.ToLower(s)
	for _, u := range byteUnits {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = s[:len(s)-len(u.suffix)], u.mult
			break
		}
	}
	if num == "" || num[0] < '0' || num[0] > '9' {
		return 0, fmt.Errorf("size %q: %w: want <integer>[unit]", s, errSyntax)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: overflows 64 bits", s)
	}
	return n * mult, nil
}

// FormatBytes writes n in the largest binary unit that divides it exactly
// ("1GiB", "512MiB"), as a plain number otherwise, and Unlimited as
// "unlimited". ParseBytes reads back every value it writes except
// "unlimited", which Config.Set reads.
func FormatBytes(n int64) string {
	if n == Unlimited {
		return "unlimited"
	}
	if n > 0 {
		for _, u := range byteUnits[:4] {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + byteUnitName(u.suffix)
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

func byteUnitName(lower string) string {
	return strings.ToUpper(lower[:1]) + "i" + "B"
}

// ParseDuration parses a non-negative duration: Go's syntax
// (time.ParseDuration: "100ms", "1h30m"), optionally preceded by whole
// days ("7d", "1d12h"), or a plain integer of milliseconds as in Kafka's
// *.ms settings ("604800000").
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("duration %q: %w: empty", s, errSyntax)
	}
	if isDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("duration %q: milliseconds out of range", s)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		if i == 0 || !isDigits(s[:i]) {
			return 0, fmt.Errorf("duration %q: %w: want <days>d[<duration>]", s, errSyntax)
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		const day = 24 * time.Hour
		if err != nil || n > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("duration %q: days out of range", s)
		}
		days = time.Duration(n) * day
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	if s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("duration %q: %w: want a non-negative duration", s, errSyntax)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if days > math.MaxInt64-d {
		return 0, fmt.Errorf("duration %q: out of range", s)
	}
	return days + d, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// FormatDuration writes d compactly in units from days down to
// nanoseconds ("7d", "1d12h", "100ms"), 0 as "0s" and Unlimited as
// "unlimited". ParseDuration reads back every non-negative value it writes.
func FormatDuration(d time.Duration) string {
	if d == Unlimited {
		return "unlimited"
	}
	if d == 0 {
		return "0s"
	}
	if d < 0 {
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
	units := []struct {
		name string
		d    time.Duration
	}{
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
		{"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond},
	}
	var b strings.Builder
	for _, u := range units {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d -= n * u.d
		}
	}
	return b.String()
}
