package topic

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxNameLength is Kafka's limit on a topic name. It leaves room in a
// 255-byte file name for "-<partition>" (MaxPartitions keeps that at five
// digits); the longer delete-pending names are cut to fit (see deleteDirName).
const MaxNameLength = 249

// InternalPrefix starts the names of Folio's own topics, such as
// __consumer_offsets. Users cannot create topics with it.
const InternalPrefix = "__"

// ValidateName reports whether name may be the name of a user topic. It
// applies Kafka's rules (1-249 characters of [a-zA-Z0-9._-], not "." or
// "..") and refuses the InternalPrefix. An accepted name never contains a
// path separator or NUL, so "<name>-<partition>" is always one file name
// inside the data directory.
func ValidateName(name string) error {
	if err := validateChars(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, InternalPrefix) {
		return fmt.Errorf("%w: %q starts with %q, which is kept for Folio's own topics", ErrReservedName, name, InternalPrefix)
	}
	return nil
}

// ValidateInternalName is ValidateName for Folio's own topics: the same
// character rules, and the name must start with InternalPrefix.
func ValidateInternalName(name string) error {
	if err := validateChars(name); err != nil {
		return err
	}
	if !strings.HasPrefix(name, InternalPrefix) {
		return fmt.Errorf("%w: internal topic %q must start with %q", ErrReservedName, name, InternalPrefix)
	}
	return nil
}

// IsInternal reports whether name is in the namespace of Folio's own topics.
func IsInternal(name string) bool { return strings.HasPrefix(name, InternalPrefix) }

func validateChars(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidName, len(name), MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !legalChar(name[i]) {
			return fmt.Errorf("%w: %q has %q at byte %d; allowed are a-z A-Z 0-9 . _ -", ErrInvalidName, name, name[i], i)
		}
	}
	return nil
}

func legalChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// collisionKey folds the differences that make two valid names clash: case
// (one directory on case-insensitive file systems) and '.' versus '_' (one
// metric name in Kafka, which refuses such pairs).
func collisionKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, ".", "_"))
}

// DirName is the name of a partition's directory inside the data directory,
// "<topic>-<partition>", as Kafka names it.
func DirName(name string, partition int32) string {
	return name + "-" + strconv.FormatInt(int64(partition), 10)
}

// ParseDirName splits a partition directory name made by DirName. It
// accepts user and internal topic names and canonical partition numbers
// (no sign, no leading zeros) below MaxPartitions, so every name it accepts
// is one DirName gives back.
func ParseDirName(dir string) (name string, partition int32, ok bool) {
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 || i == len(dir)-1 {
		return "", 0, false
	}
	name, num := dir[:i], dir[i+1:]
	if validateChars(name) != nil {
		return "", 0, false
	}
	if len(num) > 1 && num[0] == '0' {
		return "", 0, false
	}
	for j := 0; j < len(num); j++ {
		if num[j] < '0' || num[j] > '9' {
			return "", 0, false
		}
	}
	p, err := strconv.ParseInt(num, 10, 32)
	if err != nil || p >= MaxPartitions {
		return "", 0, false
	}
	return name, int32(p), true
}
