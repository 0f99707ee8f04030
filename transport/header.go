package transport

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reqHeader is a request header (Kafka's request header v1, and v2 for
// flexible versions, whose tagged fields are skipped).
type reqHeader struct {
	key, version int16
	corr         int32
	clientID     string
	flexible     bool // the request (and so its response header) is flexible
}

// parseHeader splits a request frame (without its length) into its header
// and body. It decodes the key, version, correlation id and client id; the
// caller decides whether the version is served before parseBody.
func parseHeader(frame []byte) (reqHeader, []byte, error) {
	var h reqHeader
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, len(frame))
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes in a %d-byte frame", ErrMalformed, n, len(frame))
		}
		h.clientID = string(rest[:n])
		rest = rest[n:]
	} else if n < -1 {
		return h, nil, fmt.Errorf("%w: client id length %d", ErrMalformed, n)
	}
	return h, rest, nil
}

// skipTags skips a tagged-fields section.
func skipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, fmt.Errorf("%w: bad tagged fields count", ErrMalformed)
	}
	b = b[w:]
	for range n {
		_, w := binary.Uvarint(b)
		if w <= 0 {
			return nil, fmt.Errorf("%w: bad tag", ErrMalformed)
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, fmt.Errorf("%w: bad tag size", ErrMalformed)
		}
		b = b[w+int(size):]
	}
	return b, nil
}

// decodeRequest decodes the body of a request of a served key and version.
func decodeRequest(h *reqHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	h.flexible = req.IsFlexible()
	if h.flexible {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := readRequest(req, body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	return req, nil
}

// readRequest is req.ReadFrom, with a panic (kmsg trusts some lengths)
// turned into an error: nothing panics on input.
func readRequest(req kmsg.Request, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return req.ReadFrom(body)
}

// responseHeader appends the response header for h: the correlation id,
// and for a flexible response other than ApiVersions an empty tagged-field
// section (ApiVersions answers with header v0 always, so that a client
// can read it whatever version it asked).
func appendResponseHeader(dst []byte, h *reqHeader) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.corr))
	if h.flexible && h.key != 18 {
		dst = append(dst, 0)
	}
	return dst
}
