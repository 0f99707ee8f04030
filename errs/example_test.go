package errs_test

import (
	"errors"
	"fmt"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A package declares its sentinels once, each with its class or Kafka
// code; a caller tests the shared class, and a Kafka endpoint asks for the
// code.
func Example() {
	var (
		ErrCorrupt = errs.New("store: corrupt file", errs.ErrCorrupt)
		ErrExists  = errs.New("store: name taken", kerr.TopicAlreadyExists)
	)

	damaged := errs.Corruptf(ErrCorrupt, "/data/store.db", 512, "checksum %08x, want %08x", 0xdead, 0xbeef)
	err := fmt.Errorf("open: %w", damaged)
	fmt.Println(err)
	fmt.Println(errors.Is(err, errs.ErrCorrupt), errors.Is(err, ErrCorrupt))
	var c *errs.Corruption
	if errors.As(err, &c) {
		fmt.Println(c.Path, c.Pos)
	}
	fmt.Println(errs.Kafka(err).Message)

	taken := fmt.Errorf("%w: %q", ErrExists, "logs")
	fmt.Println(errs.Kafka(taken).Message, errs.Code(taken), errs.Code(nil))
	// Output:
	// open: /data/store.db at byte 512: store: corrupt file: checksum 0000dead, want 0000beef
	// true true
	// /data/store.db 512
	// CORRUPT_MESSAGE
	// TOPIC_ALREADY_EXISTS 36 0
}
