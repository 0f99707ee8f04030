package readpath

import (
	"fmt"
	"strconv"
)

// Kind names a read path implementation.
type Kind uint8

const (
	// Mmap serves views that alias a read-only shared mapping of the file.
	Mmap Kind = iota
	// Sendfile serves views with pread (in-process) and positional sendfile
	// (to a *net.TCPConn on Linux).
	Sendfile
)

// String returns "mmap" or "sendfile", the names ParseKind accepts.
func (k Kind) String() string {
	switch k {
	case Mmap:
		return "mmap"
	case Sendfile:
		return "sendfile"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind parses the names String returns. The match is exact so that a
// typo in a configuration file is an error rather than a silent default.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "mmap":
		return Mmap, nil
	case "sendfile":
		return Sendfile, nil
	}
	return 0, fmt.Errorf("%w: %q (want \"mmap\" or \"sendfile\")", ErrUnknownKind, s)
}

// MarshalText lets a Kind sit in JSON or flag configuration by name.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText is the inverse of MarshalText.
func (k *Kind) UnmarshalText(b []byte) error {
	p, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

func (k Kind) valid() bool { return k == Mmap || k == Sendfile }

// Set implements flag.Value; on error k is unchanged.
func (k *Kind) Set(s string) error { return k.UnmarshalText([]byte(s)) }
