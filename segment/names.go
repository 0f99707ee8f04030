package segment

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// File-name suffixes of a segment's files, after the 20-digit base offset.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	// DeletedSuffix is appended to each file's name by Delete before it is
	// unlinked; a crash can leave such files behind, and the log removes
	// them at startup.
	DeletedSuffix = ".deleted"
	// TruncateSuffix is appended to the .log name for the copy that
	// TruncateTo writes when readers still hold views of the file (see
	// TruncateTo). A crash can leave it behind; it is never authoritative
	// and the log removes it at startup (Recover removes it too).
	TruncateSuffix = ".truncate"
	// StraySuffix is appended to each file's name of a segment that the
	// log found to be no part of it (one starting beyond the end of a log
	// closed cleanly) and set aside rather than adopt or delete it. The
	// log never reads such files again.
	StraySuffix = ".stray"
)

// baseDigits is the width of the zero-padded base offset in file names.
const baseDigits = 20

// FileName returns the name of one of a segment's files: the base offset in
// 20 zero-padded digits followed by suffix, e.g. FileName(368769, LogSuffix)
// is "00000000000000368769.log".
func FileName(base int64, suffix string) string {
	if base < 0 {
		return fmt.Sprintf("%0*d%s", baseDigits, base, suffix)
	}
	// Without fmt: a clean open names two files of every segment.
	var digits [baseDigits]byte
	d := strconv.AppendInt(digits[:0], base, 10)
	b := make([]byte, baseDigits, baseDigits+len(suffix))
	for i := range baseDigits - len(d) {
		b[i] = '0'
	}
	copy(b[baseDigits-len(d):], d)
	return string(append(b, suffix...))
}

// LogPath returns the path of the .log file in dir of the segment at base.
func LogPath(dir string, base int64) string { return filepath.Join(dir, FileName(base, LogSuffix)) }

// IndexPath returns the path of the offset index (.index) in dir of the
// segment at base.
func IndexPath(dir string, base int64) string {
	return filepath.Join(dir, FileName(base, IndexSuffix))
}

// TimeIndexPath returns the path of the time index (.timeindex) in dir of
// the segment at base.
func TimeIndexPath(dir string, base int64) string {
	return filepath.Join(dir, FileName(base, TimeIndexSuffix))
}

// ParseFileName splits a segment file name (no directory) into its base
// offset and everything after the digits, e.g. "00000000000000000042.log.deleted"
// gives (42, ".log.deleted", true). ok is false unless the name starts with
// exactly 20 decimal digits that fit an int64, followed by a suffix that
// starts with a dot.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	if len(name) <= baseDigits || name[baseDigits] != '.' {
		return 0, "", false
	}
	for i := 0; i < baseDigits; i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, "", false
		}
	}
	base, err := strconv.ParseInt(name[:baseDigits], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return base, name[baseDigits:], true
}
