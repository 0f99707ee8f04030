package errs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	// ErrCorrupt is the class of every error about damaged bytes on disk,
	// whichever layer found them. Its Kafka code is CORRUPT_MESSAGE, what
	// a Kafka broker answers when a batch it holds or is sent fails its
	// checks.
	ErrCorrupt = New("folio: corrupt data", kerr.CorruptMessage)
	// ErrClosed is the class of every error from a call on something that
	// was closed (a Broker, a log, a segment, a catalog, a coordinator).
	// It has no Kafka code of its own: the endpoint that serves a closed
	// part wraps it with the code its API uses (a closed group coordinator
	// is COORDINATOR_NOT_AVAILABLE).
	ErrClosed = errors.New("folio: closed")
)

// New returns a sentinel error with the given text that also matches each
// class (errors.Is, errors.As): a shared class such as ErrCorrupt or
// ErrClosed, another sentinel, or the *kerr.Error that is its Kafka code.
// The text is the sentinel's alone; the classes add none. Nil classes are
// ignored.
func New(text string, classes ...error) error {
	return &sentinel{text: text, classes: nonNil(classes)}
}

type sentinel struct {
	text    string
	classes []error
}

func (s *sentinel) Error() string   { return s.text }
func (s *sentinel) Unwrap() []error { return s.classes }

// Mark returns err, with its text unchanged, matching each class as well as
// what it matched before. err's own chain is searched first, so a Kafka
// code it already carries wins over one added by Mark. Mark(nil) is nil.
func Mark(err error, classes ...error) error {
	if err == nil {
		return nil
	}
	classes = nonNil(classes)
	if len(classes) == 0 {
		return err
	}
	return &marked{err: err, classes: classes}
}

type marked struct {
	err     error
	classes []error
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() []error {
	return append([]error{m.err}, m.classes...)
}

func nonNil(errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Corruption is damage found on disk: where it is and what is wrong. The
// first layer that knows the file makes it (Corrupt, Corruptf); layers
// above pass it on, and errors.As finds it under any wrapping. It matches
// ErrCorrupt, the class of the package that found the damage (for example
// segment.ErrCorrupt), and its cause.
type Corruption struct {
	// Path is the file holding the damage, or for records read through a
	// log (such as those of __consumer_offsets) the partition's directory.
	Path string
	// Pos is the byte position of the damage in Path, -1 when it is not
	// known or the damage is the file as a whole (a bad size, a checksum
	// over the whole file).
	Pos int64
	// Offset is the Kafka offset of the damaged batch or record, -1 when
	// it is not known.
	Offset int64
	// Err says what is wrong.
	Err error

	class error
}

// Corrupt reports damage of the given class (a package's ErrCorrupt
// sentinel; nil means ErrCorrupt) in the file at path, at byte pos (-1:
// unknown, or the file as a whole), found because of cause. Offset is -1;
// AtOffset sets it.
func Corrupt(class error, path string, pos int64, cause error) *Corruption {
	if class == nil {
		class = ErrCorrupt
	}
	return &Corruption{Path: path, Pos: pos, Offset: -1, Err: cause, class: class}
}

// Corruptf is Corrupt with the cause formatted as by fmt.Errorf (so %w
// works).
func Corruptf(class error, path string, pos int64, format string, args ...any) *Corruption {
	return Corrupt(class, path, pos, fmt.Errorf(format, args...))
}

// AtOffset sets the offset of the damaged batch or record and returns e,
// for use on a Corruption just made.
func (e *Corruption) AtOffset(offset int64) *Corruption {
	e.Offset = offset
	return e
}

// Error reads "<path> at byte <pos>: <class>: <cause>", each part said
// once. When the cause is itself a corruption error of a lower layer, it
// speaks for itself: it names its class and the batch it found ("record:
// corrupt batch at offset 17: ..."), so the class's text is left out. The
// offset is written ("at offset <offset>") only where no byte position is
// known and the cause does not speak for itself; it stays in the Offset
// field either way.
func (e *Corruption) Error() string {
	own := e.Err == nil || !errors.Is(e.Err, ErrCorrupt)
	var b strings.Builder
	b.WriteString(e.Path)
	switch {
	case e.Pos >= 0:
		b.WriteString(" at byte ")
		b.WriteString(strconv.FormatInt(e.Pos, 10))
	case e.Offset >= 0 && own:
		b.WriteString(" at offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	switch {
	case e.Err == nil:
		b.WriteString(e.classOrDefault().Error())
	case !own:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString(e.classOrDefault().Error())
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, then the class (which matches ErrCorrupt).
func (e *Corruption) Unwrap() []error {
	if e.Err == nil {
		return []error{e.classOrDefault()}
	}
	return []error{e.Err, e.classOrDefault()}
}

// classOrDefault is the class, ErrCorrupt for a Corruption built as a
// literal.
func (e *Corruption) classOrDefault() error {
	if e.class == nil {
		return ErrCorrupt
	}
	return e.class
}
