package faultfs

import (
	"fmt"
	"sync/atomic"
)

// OpKind names the operations a FS hook sees.
type OpKind uint8

// The operations a FS hook is called for. Reads, Stat, ReadDir and
// Close are not hooked: they change nothing a power cut could lose.
const (
	// OpOpen is OpenFile without O_CREATE.
	OpOpen OpKind = iota + 1
	// OpCreate is OpenFile with O_CREATE, whether or not the file exists.
	OpCreate
	// OpWrite is File.Write (Off is -1: the file offset) or File.WriteAt.
	OpWrite
	// OpSync is File.Sync.
	OpSync
	// OpSyncDir is FS.SyncDir.
	OpSyncDir
	// OpRename is FS.Rename from Path to NewPath.
	OpRename
	// OpRemove is FS.Remove.
	OpRemove
	// OpTruncate is File.Truncate; Off is the new size.
	OpTruncate
	// OpAllocate is File.Allocate of [Off, Off+Len).
	OpAllocate
	// OpMkdir is FS.MkdirAll.
	OpMkdir
)

var opNames = [...]string{
	OpOpen:     "open",
	OpCreate:   "create",
	OpWrite:    "write",
	OpSync:     "sync",
	OpSyncDir:  "syncdir",
	OpRename:   "rename",
	OpRemove:   "remove",
	OpTruncate: "truncate",
	OpAllocate: "allocate",
	OpMkdir:    "mkdir",
}

func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op describes one operation for a FS hook.
type Op struct {
	Kind OpKind
	// Path is the absolute, cleaned path of the file or directory. For a
	// file handle it is where the file lives now (after any renames), or
	// the name it was opened with if it has been removed.
	Path string
	// NewPath is the destination of an OpRename.
	NewPath string
	// Off is the write offset (-1 for a write at the file offset), the new
	// size for OpTruncate, or the start of an OpAllocate.
	Off int64
	// Len is the number of bytes of an OpWrite or OpAllocate.
	Len int
}

func (op Op) String() string {
	switch op.Kind {
	case OpRename:
		return fmt.Sprintf("rename %s -> %s", op.Path, op.NewPath)
	case OpWrite, OpAllocate:
		return fmt.Sprintf("%s %s off=%d len=%d", op.Kind, op.Path, op.Off, op.Len)
	case OpTruncate:
		return fmt.Sprintf("truncate %s size=%d", op.Path, op.Off)
	}
	return op.Kind.String() + " " + op.Path
}

// Hook decides the fate of an operation before it runs: nil lets it run,
// an error fails it without performing it (a *ShortWriteError tears a
// write instead). A hook may block; FS holds none of its locks while
// calling it. It is called from the goroutine doing the operation, so it
// must be safe for concurrent use.
type Hook func(Op) error

// FailNth returns a hook that fails the nth (1-based, counted from when the
// hook is installed) operation of the given kind with err, once, and lets
// every other operation through.
func FailNth(kind OpKind, n int, err error) Hook {
	return FailNthWhere(func(op Op) bool { return op.Kind == kind }, n, err)
}

// FailNthWhere is FailNth counting only the operations for which match
// returns true.
func FailNthWhere(match func(Op) bool, n int, err error) Hook {
	var seen atomic.Int64
	return func(op Op) error {
		if match(op) && seen.Add(1) == int64(n) {
			return err
		}
		return nil
	}
}

// FailFromNthWhere fails the nth matching operation and every matching one
// after it, which is how a full disk or a dead device behaves.
func FailFromNthWhere(match func(Op) bool, n int, err error) Hook {
	var seen atomic.Int64
	return func(op Op) error {
		if match(op) && seen.Add(1) >= int64(n) {
			return err
		}
		return nil
	}
}

// Chain returns a hook that calls each hook in order and returns the first
// error. Nil hooks are skipped.
func Chain(hooks ...Hook) Hook {
	return func(op Op) error {
		for _, h := range hooks {
			if h == nil {
				continue
			}
			if err := h(op); err != nil {
				return err
			}
		}
		return nil
	}
}
