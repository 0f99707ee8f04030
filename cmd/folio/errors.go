package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/foliolog/folio/errs"
)

// Errors of the command line. Every command returns one of these (or an
// error of the folio packages) wrapped with the detail; main prints it on
// one line and picks the exit status from its class.
var (
	// ErrUsage is a command line that cannot be run: an unknown command or
	// flag, a missing or malformed argument. Exit status 2.
	ErrUsage = errors.New("usage")

	// ErrNoDataDir means the data directory does not exist, or is not a
	// Folio data directory (no format file).
	ErrNoDataDir = errors.New("not a Folio data directory")

	// ErrUnknownTopic and ErrUnknownPartition name what the catalog does
	// not hold.
	ErrUnknownTopic     = errors.New("unknown topic")
	ErrUnknownPartition = errors.New("unknown partition")

	// ErrTopicExists is a topics create of a name the catalog holds.
	ErrTopicExists = errors.New("already exists")

	// ErrCorrupt is damage a read command found on disk: a batch that
	// fails its checks, an index entry that does not match its log, a
	// metadata file that fails its checksum. The error carries the file
	// and the byte position. It matches errs.ErrCorrupt (folio.ErrCorrupt),
	// as the library's corruption errors do.
	ErrCorrupt = errs.New("corrupt", errs.ErrCorrupt)

	// ErrOffsetDeleted means a consumer's position lies below the start
	// of the partition: retention or DeleteRecords removed the records.
	ErrOffsetDeleted = errors.New("offset no longer in the log")

	// ErrProduceFailed means at least one record of a produce run was not
	// acknowledged; the message names its input line.
	ErrProduceFailed = errors.New("record not produced")
)

// corruptError is damage at a byte position of a file.
type corruptError struct {
	Path string
	Pos  int64 // byte position in Path
	// Offset is the base offset of the batch at Pos, or -1 if the header
	// is too damaged to tell.
	Offset int64
	Err    error
}

func (e *corruptError) Error() string {
	// A cause that names the batch itself (record's errors do) is not
	// preceded by the same offset.
	if e.Offset >= 0 && !strings.Contains(e.Err.Error(), fmt.Sprintf("at offset %d:", e.Offset)) {
		return fmt.Sprintf("%s: position %d (batch at offset %d): %v", e.Path, e.Pos, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: position %d: %v", e.Path, e.Pos, e.Err)
}

// Unwrap returns the cause and ErrCorrupt, so errors.Is(err, ErrCorrupt)
// (and errs.ErrCorrupt) is true for every corruptError, whatever
// lower-level error it wraps.
func (e *corruptError) Unwrap() []error { return []error{e.Err, ErrCorrupt} }

// usageError is a command line that cannot run. Its message is the
// problem alone: main prints the class as the exit status, not as words.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrUsage) true.
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// usagef returns an ErrUsage error with a message.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// classifiedError puts an error of the folio packages in one of this
// command's classes without adding words: its message already says what
// the class would.
type classifiedError struct{ class, err error }

func (e *classifiedError) Error() string   { return e.err.Error() }
func (e *classifiedError) Unwrap() []error { return []error{e.class, e.err} }

// classify returns err, matching class too.
func classify(class, err error) error { return &classifiedError{class: class, err: err} }
