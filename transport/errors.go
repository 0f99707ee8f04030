package transport

import "errors"

// Sentinel errors. Errors returned by this package wrap them (test with
// errors.Is).
var (
	// ErrInvalidOptions is returned by NewServer for Options it cannot
	// serve with; the error names the field.
	ErrInvalidOptions = errors.New("transport: invalid options")

	// ErrServerClosed is returned by Serve once Shutdown was called, as
	// net/http's Server does.
	ErrServerClosed = errors.New("transport: server closed")

	// ErrMalformed is the class of a request the server cannot read: a
	// frame length out of bounds, a short header, an unknown API key or
	// version, bytes kmsg cannot decode. The connection that sent it is
	// closed; the error is logged, never returned to a caller.
	ErrMalformed = errors.New("transport: malformed request")
)
