package record

import (
	"errors"
	"fmt"
	"iter"

	"github.com/foliolog/folio/errs"
)

// minRecordSize is the smallest encoded record: a one-byte length, then
// attributes, timestamp delta, offset delta, key length, value length and
// header count at one byte each.
const minRecordSize = 7

// RecordView is one decoded record. Its byte slices alias the batch (when
// uncompressed) or the iterator's pooled decompression buffer: they are
// valid until the RecordIter is closed and, for an uncompressed batch, for
// as long as the batch's bytes are. Copy what must outlive that.
type RecordView struct {
	offset    int64
	timestamp int64
	key       []byte // nil when null
	value     []byte // nil when null
	headers   []byte // the encoded headers, validated by RecordIter.Next
	nHeaders  int32
	attrs     int8
}

// Offset is the record's offset: the batch's base offset plus its delta.
func (r RecordView) Offset() int64 { return r.offset }

// Timestamp is the record's timestamp in milliseconds: its create time, or
// for a log-append-time batch the batch's max timestamp, which the broker
// set to the append time.
func (r RecordView) Timestamp() int64 { return r.timestamp }

// Key returns the key; nil means null, and a non-null empty key is a
// non-nil empty slice.
func (r RecordView) Key() []byte { return r.key }

// Value returns the value; nil means null (a tombstone).
func (r RecordView) Value() []byte { return r.value }

// KeyIsNull reports whether the key is null rather than empty.
func (r RecordView) KeyIsNull() bool { return r.key == nil }

// ValueIsNull reports whether the value is null rather than empty.
func (r RecordView) ValueIsNull() bool { return r.value == nil }

// Attributes is the record's own attribute byte, which Kafka leaves unused
// and Folio keeps as given.
func (r RecordView) Attributes() int8 { return r.attrs }

// NumHeaders is the number of headers.
func (r RecordView) NumHeaders() int { return int(r.nHeaders) }

// Headers returns an iterator over the record's headers, in order.
func (r RecordView) Headers() HeaderIter {
	return HeaderIter{rest: r.headers, left: r.nHeaders}
}

// HeaderValue returns the value of the first header whose key is key, and
// whether there is one. The value is nil when the header's value is null.
func (r RecordView) HeaderValue(key string) (value []byte, ok bool) {
	for h := r.Headers(); h.Next(); {
		if string(h.Key()) == key {
			return h.Value(), true
		}
	}
	return nil, false
}

// HeaderIter walks a record's headers without allocating. Its slices live
// as long as the RecordView's.
type HeaderIter struct {
	rest       []byte
	left       int32
	key, value []byte
}

// Next advances to the next header and reports whether there is one.
func (h *HeaderIter) Next() bool {
	if h.left <= 0 {
		return false
	}
	key, value, n, ok := readHeader(h.rest)
	if !ok {
		// RecordIter.Next validated these bytes, so only a HeaderIter made
		// from a zero RecordView or a modified buffer gets here.
		h.left = 0
		return false
	}
	h.key, h.value = key, value
	h.rest = h.rest[n:]
	h.left--
	return true
}

// Key is the current header's key.
func (h *HeaderIter) Key() []byte { return h.key }

// Value is the current header's value; nil means null.
func (h *HeaderIter) Value() []byte { return h.value }

// readHeader decodes one header from the front of b.
func readHeader(b []byte) (key, value []byte, n int, ok bool) {
	kl, k := readVarint(b)
	if k == 0 || kl < 0 || int(kl) > len(b)-k {
		return nil, nil, 0, false
	}
	key = b[k : k+int(kl)]
	n = k + int(kl)
	value, v, ok := readBytes(b[n:])
	if !ok {
		return nil, nil, 0, false
	}
	return key, value, n + v, true
}

// readBytes decodes a varint-length-prefixed nullable byte string.
func readBytes(b []byte) (v []byte, n int, ok bool) {
	l, k := readVarint(b)
	switch {
	case k == 0 || l < -1 || int(l) > len(b)-k:
		return nil, 0, false
	case l == -1:
		return nil, k, true
	}
	return b[k : k+int(l)], k + int(l), true
}

// RecordIter decodes the records of one batch. Use it as
//
//	it := batch.Records(nil)
//	defer it.Close()
//	for it.Next() {
//		r := it.Record()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// Iterating an uncompressed batch allocates nothing. A compressed batch is
// decompressed once, into a pooled buffer that Close returns. A RecordIter
// must not be copied after its first use.
type RecordIter struct {
	batch      Batch
	data       []byte  // the records section: the batch's tail or *buf
	buf        *[]byte // pooled decompression output; nil if uncompressed
	pos        int     // where the next record starts in data
	left       int32   // records not yet decoded
	prevDelta  int32
	lastDelta  int32
	baseOffset int64
	baseTS     int64
	maxTS      int64
	appendTime bool
	rec        RecordView
	err        error
}

// Records returns an iterator over b's records. It validates the batch
// first (size, magic, CRC unless opts.SkipCRC) and decompresses it; any
// failure is reported by Err and Next returns false. A nil opts means the
// defaults.
func (b Batch) Records(opts *DecodeOptions) RecordIter {
	var it RecordIter
	it.err = it.init(b, opts)
	return it
}

func (it *RecordIter) init(b Batch, opts *DecodeOptions) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	size, err := CheckHeader(b)
	if err != nil {
		return err
	}
	if size > o.MaxBatchBytes {
		return fmt.Errorf("%w: batch at offset %d is %d bytes, over MaxBatchBytes %d", ErrTooLarge, b.BaseOffset(), size, o.MaxBatchBytes)
	}
	if size != len(b) {
		return fmt.Errorf("%w at offset %d: length field says %d bytes, have %d", ErrCorrupt, b.BaseOffset(), size, len(b))
	}
	if !o.SkipCRC {
		if got, want := b.ComputeCRC(), b.CRC(); got != want {
			return fmt.Errorf("%w at offset %d: crc %08x, computed %08x", ErrCorrupt, b.BaseOffset(), want, got)
		}
	}
	it.batch = b
	it.left = b.NumRecords()
	it.prevDelta = -1
	it.lastDelta = b.LastOffsetDelta()
	it.baseOffset = b.BaseOffset()
	it.baseTS = b.BaseTimestamp()
	it.maxTS = b.MaxTimestamp()
	it.appendTime = b.LogAppendTime()
	it.data = b[HeaderSize:]

	codec := b.Codec()
	switch {
	case codec == CodecNone:
	case !codec.valid():
		return errs.Mark(fmt.Errorf("%w at offset %d: compression codec %d is not one Kafka defines", ErrCorrupt, it.baseOffset, codec), ErrUnknownCodec)
	case len(it.data) == 0:
		// A compacted batch can keep its codec bits with no records left;
		// there is no stream to decode.
	default:
		it.buf = getDecodeBuf()
		if err := decompress(it.buf, it.data, codec, o.MaxDecompressedBytes); err != nil {
			if errors.Is(err, errCodecTooLarge) {
				return fmt.Errorf("%w: batch at offset %d: %s records section decompresses to more than MaxDecompressedBytes %d", ErrTooLarge, it.baseOffset, codec, o.MaxDecompressedBytes)
			}
			return fmt.Errorf("%w at offset %d: %s records section: %w", ErrCorrupt, it.baseOffset, codec, err)
		}
		it.data = *it.buf
	}
	// Every record takes at least minRecordSize bytes, so a count the data
	// cannot hold is refused now rather than after decoding the rest.
	if int64(it.left) > int64(len(it.data)/minRecordSize) {
		return fmt.Errorf("%w at offset %d: claims %d records in %d bytes", ErrCorrupt, it.baseOffset, it.left, len(it.data))
	}
	return nil
}

// Next decodes the next record and reports whether there is one. It
// returns false at the end of the batch or on an error, which Err reports.
func (it *RecordIter) Next() bool {
	if it.err != nil {
		return false
	}
	if it.left == 0 {
		if it.pos != len(it.data) {
			it.err = fmt.Errorf("%w at offset %d: %d bytes after the last of %d records", ErrCorrupt, it.baseOffset, len(it.data)-it.pos, it.batch.NumRecords())
			it.pos = len(it.data)
		}
		return false
	}
	if err := it.decode(); err != nil {
		it.err = err
		return false
	}
	it.left--
	return true
}

func (it *RecordIter) decode() error {
	rest := it.data[it.pos:]
	length, n := readVarint(rest)
	if n == 0 || length < minRecordSize-1 || int(length) > len(rest)-n {
		return it.corrupt(fmt.Sprintf("record length %d with %d bytes left", length, len(rest)))
	}
	body := rest[n : n+int(length)]
	r := &it.rec
	r.attrs = int8(body[0])
	p := 1
	tsDelta, k := readVarlong(body[p:])
	if k == 0 {
		return it.corrupt("bad timestamp delta")
	}
	p += k
	offDelta, k := readVarint(body[p:])
	if k == 0 || offDelta <= it.prevDelta || offDelta > it.lastDelta {
		return it.corrupt(fmt.Sprintf("offset delta %d after %d, batch's last %d", offDelta, it.prevDelta, it.lastDelta))
	}
	p += k
	var ok bool
	if r.key, k, ok = readBytes(body[p:]); !ok {
		return it.corrupt("bad key length")
	}
	p += k
	if r.value, k, ok = readBytes(body[p:]); !ok {
		return it.corrupt("bad value length")
	}
	p += k
	nh, k := readVarint(body[p:])
	// A header takes at least two bytes, which bounds the count before
	// walking it.
	if k == 0 || nh < 0 || int(nh) > (len(body)-p-k)/2 {
		return it.corrupt(fmt.Sprintf("header count %d", nh))
	}
	p += k
	hstart := p
	for i := int32(0); i < nh; i++ {
		_, _, hn, ok := readHeader(body[p:])
		if !ok {
			return it.corrupt(fmt.Sprintf("header %d of %d", i, nh))
		}
		p += hn
	}
	if p != len(body) {
		return it.corrupt(fmt.Sprintf("%d bytes after the headers", len(body)-p))
	}
	r.headers = body[hstart:]
	r.nHeaders = nh
	r.offset = it.baseOffset + int64(offDelta)
	if it.appendTime {
		r.timestamp = it.maxTS
	} else {
		r.timestamp = it.baseTS + tsDelta
	}
	it.prevDelta = offDelta
	it.pos += n + int(length)
	return nil
}

// SkipBefore moves the iterator past the records whose offset is below
// offset, so that the next Next decodes the first record at or beyond it:
// a point read into the middle of a batch. A skipped record is not
// decoded: only its length, timestamp delta and offset delta are read
// (its bytes are covered by the batch's CRC, which Records or Parse
// checked), so its key, value and headers cost nothing. A record whose
// framing or offset delta is bad stops the iterator as Next would, and
// Err reports it.
func (it *RecordIter) SkipBefore(offset int64) {
	for it.err == nil && it.left > 0 {
		rest := it.data[it.pos:]
		length, n := readVarint(rest)
		if n == 0 || length < minRecordSize-1 || int(length) > len(rest)-n {
			it.err = it.corrupt(fmt.Sprintf("record length %d with %d bytes left", length, len(rest)))
			return
		}
		body := rest[n : n+int(length)]
		_, k := readVarlong(body[1:])
		if k == 0 {
			it.err = it.corrupt("bad timestamp delta")
			return
		}
		offDelta, k := readVarint(body[1+k:])
		if k == 0 || offDelta <= it.prevDelta || offDelta > it.lastDelta {
			it.err = it.corrupt(fmt.Sprintf("offset delta %d after %d, batch's last %d", offDelta, it.prevDelta, it.lastDelta))
			return
		}
		if it.baseOffset+int64(offDelta) >= offset {
			return
		}
		it.prevDelta = offDelta
		it.pos += n + int(length)
		it.left--
	}
}

func (it *RecordIter) corrupt(what string) error {
	i := it.batch.NumRecords() - it.left
	return fmt.Errorf("%w at offset %d: record %d at byte %d of the records section: %s", ErrCorrupt, it.baseOffset, i, it.pos, what)
}

// Record returns the record Next decoded. See RecordView for how long its
// bytes live.
func (it *RecordIter) Record() RecordView { return it.rec }

// Buffered returns the bytes of the pooled decompression buffer the
// iterator holds until Close, 0 for an uncompressed batch.
func (it *RecordIter) Buffered() int {
	if it.buf == nil {
		return 0
	}
	return cap(*it.buf)
}

// Remaining returns how many of the batch's records Next has yet to
// decode (SkipBefore passes count as decoded); 0 after an error or Close.
func (it *RecordIter) Remaining() int {
	if it.err != nil {
		return 0
	}
	return int(it.left)
}

// Err returns the error that stopped iteration, or nil at a clean end.
func (it *RecordIter) Err() error { return it.err }

// Close returns the decompression buffer to its pool; record views of a
// compressed batch are invalid afterwards. Close is idempotent and leaves
// the iterator exhausted.
func (it *RecordIter) Close() {
	if it.buf != nil {
		putDecodeBuf(it.buf)
		it.buf = nil
	}
	it.data = nil
	it.pos = 0
	it.left = 0
	it.rec = RecordView{}
}

// All returns a Go iterator over the remaining records. A decoding error
// is yielded once, with a zero RecordView, after the last good record. It
// does not close the iterator.
func (it *RecordIter) All() iter.Seq2[RecordView, error] {
	return func(yield func(RecordView, error) bool) {
		for it.Next() {
			if !yield(it.rec, nil) {
				return
			}
		}
		if it.err != nil {
			yield(RecordView{}, it.err)
		}
	}
}
