package record

import (
	"errors"

	"github.com/foliolog/folio/errs"
)

var (
	// ErrCorrupt marks bytes that are not a valid batch: bad magic, length,
	// checksum, record framing or compressed payload. Errors wrap it with the
	// detail ("record: corrupt batch at offset 17: crc ..."), so test with
	// errors.Is. It matches errs.ErrCorrupt, the class every layer's
	// corruption shares. This package sees bytes, not files: the first
	// layer that knows the file reports the damage as an *errs.Corruption
	// with the path and byte position.
	ErrCorrupt = errs.New("record: corrupt batch", errs.ErrCorrupt)
	// ErrShortBatch means fewer bytes than a batch header or than the
	// batch's length field claims; at the tail of a file it is a torn write.
	ErrShortBatch = errors.New("record: short batch")
	// ErrTooLarge means a size is over a configured cap or over what the
	// format can hold: a batch above DecodeOptions.MaxBatchBytes, a records
	// section that would decompress beyond MaxDecompressedBytes, or a record
	// or batch whose length does not fit the format's int32 fields.
	ErrTooLarge = errors.New("record: too large")
	// ErrUnknownCodec means attribute bits 0-2 name no codec Kafka defines
	// (5, 6 or 7). When reading, errors wrap both it and ErrCorrupt.
	ErrUnknownCodec = errors.New("record: unknown compression codec")
	// ErrInvalidOptions means an Options field is out of range; the error
	// names the field.
	ErrInvalidOptions = errors.New("record: invalid options")
	// ErrOffsetDelta means Builder.AppendAt was given an offset delta that
	// is negative or not above the previous record's.
	ErrOffsetDelta = errors.New("record: offset delta not increasing")
)
