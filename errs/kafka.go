package errs

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka returns the Kafka error code a Kafka endpoint answers err with:
// nil for nil; the first *kerr.Error in err's chain, in the order errors.As
// searches it (a sentinel declared with its code by New, or a *kerr.Error
// returned or wrapped as it is); REQUEST_TIMED_OUT for an ended context;
// UNKNOWN_SERVER_ERROR for anything else.
func Kafka(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	if k, ok := errors.AsType[*kerr.Error](err); ok && k != nil {
		return k
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

// Code is Kafka(err).Code, and 0 (NONE) for nil: the number a response's
// error code field carries.
func Code(err error) int16 {
	if k := Kafka(err); k != nil {
		return k.Code
	}
	return 0
}
