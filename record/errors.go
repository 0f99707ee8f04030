package record

import "errors"

var (
	// ErrCorrupt marks bytes that are not a valid batch: bad magic, length,
	// checksum or record framing. Errors wrap it with the detail.
	ErrCorrupt = errors.New("record: corrupt batch")
	// ErrShortBatch means fewer bytes than a batch header or than the
	// batch's length field claims; at the tail of a file it is a torn write.
	ErrShortBatch = errors.New("record: short batch")
)
