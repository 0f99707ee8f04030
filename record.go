package folio

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/foliolog/folio/record"
)

// Header is one record header: a key and a value (nil is a null value).
// Kafka allows repeated keys.
type Header = record.Header

// Record is one record, as produced and as consumed.
//
// To produce, set Topic, Key (nil: no key), Value, and optionally Headers
// and Timestamp (zero: the time of the produce call, read once per batch,
// so records that join an open batch carry the time it was opened, earlier
// by at most ProducerOptions.Linger plus one append); Partition is used
// only by a Producer with ManualPartitioning. The Producer sets Partition
// and Offset when the record is acknowledged. The record and the slices it
// points to must not be changed until then.
//
// A consumed record carries every field. Its Key, Value and header values
// are the caller's to keep unless the Consumer was opened with
// ConsumerOptions.ZeroCopy (see there for their lifetime).
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	// Key is nil for a record without a key, which Kafka distinguishes from
	// an empty key.
	Key []byte
	// Value is nil for a null value (a tombstone in a compacted topic).
	Value   []byte
	Headers []Header
	// Timestamp is the record's create time or, for a topic with
	// TimestampType LogAppendTime, the time the log appended it, to the
	// millisecond.
	Timestamp time.Time
}

// Format prints a record for %v and %+v with its key, value and header
// values as quoted strings (nil, a null, as nil), so that a printed record
// shows what it holds rather than byte numbers:
//
//	{Topic:events Partition:0 Offset:7 Key:"k1" Value:"hello" Headers:[{Key:h Value:"v"}] Timestamp:...}
//
// Other verbs, %#v included, print the struct as fmt would without this
// method.
func (r Record) Format(f fmt.State, verb rune) {
	type plain Record // no Format method
	if verb != 'v' || f.Flag('#') {
		fmt.Fprintf(f, fmt.FormatString(f, verb), plain(r))
		return
	}
	plus := f.Flag('+')
	var b strings.Builder
	field := func(name, value string) {
		if b.Len() > 1 {
			b.WriteByte(' ')
		}
		if plus {
			b.WriteString(name)
			b.WriteByte(':')
		}
		b.WriteString(value)
	}
	b.WriteByte('{')
	field("Topic", r.Topic)
	field("Partition", strconv.FormatInt(int64(r.Partition), 10))
	field("Offset", strconv.FormatInt(r.Offset, 10))
	field("Key", quoteBytes(r.Key))
	field("Value", quoteBytes(r.Value))
	var hs strings.Builder
	hs.WriteByte('[')
	for i, h := range r.Headers {
		if i > 0 {
			hs.WriteByte(' ')
		}
		if plus {
			fmt.Fprintf(&hs, "{Key:%s Value:%s}", h.Key, quoteBytes(h.Value))
		} else {
			fmt.Fprintf(&hs, "{%s %s}", h.Key, quoteBytes(h.Value))
		}
	}
	hs.WriteByte(']')
	field("Headers", hs.String())
	field("Timestamp", r.Timestamp.String())
	b.WriteByte('}')
	_, _ = f.Write([]byte(b.String()))
}

func quoteBytes(b []byte) string {
	if b == nil {
		return "nil"
	}
	return strconv.Quote(string(b))
}

// varintLen is the length of v as a zigzag varint, Kafka's record framing.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesFieldLen is the encoded length of a nullable byte field.
func bytesFieldLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// aloneBatchSize is the size of a batch holding only r, uncompressed: the
// smallest batch r can travel in, so a record above the topic's max message
// bytes by this measure is refused before anything is buffered. Deltas are
// zero in a batch of one.
func aloneBatchSize(r *Record) int {
	body := 1 + varintLen(0) + varintLen(0) + bytesFieldLen(r.Key) + bytesFieldLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + bytesFieldLen(h.Value)
	}
	return record.HeaderSize + varintLen(int64(body)) + body
}

// memSize is what a buffered record counts against the producer's
// MaxBufferedBytes: its bytes, once as the caller's and once as encoded in
// the batch, plus the bookkeeping that travels with it (the Record, its
// callback, its entry in the batch).
func memSize(r *Record) int64 {
	n := 2*(len(r.Key)+len(r.Value)) + 160
	for _, h := range r.Headers {
		n += 2*(len(h.Key)+len(h.Value)) + 24
	}
	return int64(n)
}
