package faultfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/foliolog/folio/vfs"
)

// faultFile is a File of a FS: the real *os.File plus the identity of
// the file and the generation it was opened in.
type faultFile struct {
	fs   *FS
	real vfs.File // the OS file layer's handle; f is its descriptor
	f    *os.File
	ino  *inode
	name string // as given to OpenFile, for Name
	abs  string // absolute form of name, for ops once the file is removed
	gen  uint64
	// writeOnly: opened O_WRONLY by the caller (the real descriptor is
	// O_RDWR so that Sync can read its content).
	writeOnly bool
}

// op describes an operation on the file where it lives now.
func (h *faultFile) op(kind OpKind) Op {
	h.fs.nsMu.Lock()
	p := h.ino.path
	h.fs.nsMu.Unlock()
	if p == "" {
		p = h.abs
	}
	return Op{Kind: kind, Path: p}
}

// enterRead is enter for the calls that are not hooked.
func (h *faultFile) enterRead(opName string) error {
	h.fs.cutMu.RLock()
	if h.fs.gen.Load() != h.gen {
		defer h.fs.cutMu.RUnlock()
		return h.fs.deadErrLocked(opName, h.abs, h.gen)
	}
	return nil
}

func (h *faultFile) Read(p []byte) (int, error) {
	if h.writeOnly {
		return 0, &os.PathError{Op: "read", Path: h.name, Err: syscall.EBADF}
	}
	if err := h.enterRead("read"); err != nil {
		return 0, err
	}
	defer h.fs.cutMu.RUnlock()
	return h.f.Read(p)
}

func (h *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if h.writeOnly {
		return 0, &os.PathError{Op: "read", Path: h.name, Err: syscall.EBADF}
	}
	if err := h.enterRead("read"); err != nil {
		return 0, err
	}
	defer h.fs.cutMu.RUnlock()
	return h.f.ReadAt(p, off)
}

func (h *faultFile) Write(p []byte) (int, error) {
	return h.write(p, -1)
}

func (h *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		// Let the os package word the error, without consulting the hook.
		if err := h.enterRead("write"); err != nil {
			return 0, err
		}
		defer h.fs.cutMu.RUnlock()
		return h.f.WriteAt(p, off)
	}
	return h.write(p, off)
}

// write is Write (off < 0) and WriteAt. A hook's *ShortWriteError stores a
// prefix of p and then fails: a torn write.
func (h *faultFile) write(p []byte, off int64) (int, error) {
	op := h.op(OpWrite)
	op.Off, op.Len = off, len(p)
	injected, err := h.fs.enter(op, h.gen)
	if err != nil {
		return 0, err
	}
	defer h.fs.cutMu.RUnlock()
	if injected != nil {
		var sw *ShortWriteError
		if !errors.As(injected, &sw) {
			return 0, injectedErr(op, injected)
		}
		n := min(max(sw.N, 0), len(p))
		m, err := h.writeReal(p[:n], off)
		if err != nil {
			return m, vfs.MarkNoSpace(err)
		}
		return m, injectedErr(op, injected)
	}
	n, err := h.writeReal(p, off)
	return n, vfs.MarkNoSpace(err)
}

func (h *faultFile) writeReal(p []byte, off int64) (int, error) {
	if off < 0 {
		return h.f.Write(p)
	}
	return h.f.WriteAt(p, off)
}

func (h *faultFile) Close() error {
	h.fs.cutMu.RLock()
	defer h.fs.cutMu.RUnlock()
	if h.fs.gen.Load() != h.gen {
		// The cut left the descriptor open for its owner (see killLocked);
		// this is where it goes. A second Close of the handle finds it
		// closed already, which changes nothing: the answer is the death.
		_ = h.f.Close()
		return h.fs.deadErrLocked("close", h.abs, h.gen)
	}
	h.fs.nsMu.Lock()
	delete(h.fs.handles, h)
	h.fs.nsMu.Unlock()
	return h.f.Close()
}

// Sync makes the file's current bytes, including any written through a
// shared mapping of OS(), its durable content. On a directory handle it is
// SyncDir. It does not fsync the real disk: durability is what FS
// models, and real fsyncs would only slow the tests down.
func (h *faultFile) Sync() error {
	op := h.op(OpSync)
	injected, err := h.fs.enter(op, h.gen)
	if err != nil {
		return err
	}
	defer h.fs.cutMu.RUnlock()
	if injected != nil {
		return injectedErr(op, injected)
	}
	ino := h.ino
	if ino.dir {
		return h.fs.syncDirEntered(op.Path)
	}
	ino.syncMu.Lock()
	defer ino.syncMu.Unlock()
	snap, err := readAllAt(h.f, ino.spare)
	if err != nil {
		return err
	}
	h.fs.nsMu.Lock()
	ino.spare = ino.durable
	ino.durable = snap
	ino.captured = true
	h.fs.nsMu.Unlock()
	return nil
}

func (h *faultFile) Truncate(size int64) error {
	op := h.op(OpTruncate)
	op.Off = size
	injected, err := h.fs.enter(op, h.gen)
	if err != nil {
		return err
	}
	defer h.fs.cutMu.RUnlock()
	if injected != nil {
		return injectedErr(op, injected)
	}
	return vfs.MarkNoSpace(h.f.Truncate(size))
}

func (h *faultFile) Allocate(off, n int64) error {
	if off < 0 || n < 0 || off+n < off {
		return fmt.Errorf("%w: allocate %s: off=%d n=%d", vfs.ErrInvalidRange, h.name, off, n)
	}
	if n == 0 {
		return nil
	}
	op := h.op(OpAllocate)
	op.Off, op.Len = off, int(n)
	injected, err := h.fs.enter(op, h.gen)
	if err != nil {
		return err
	}
	defer h.fs.cutMu.RUnlock()
	if injected != nil {
		return injectedErr(op, injected)
	}
	return h.real.Allocate(off, n) // the OS file layer marks ErrNoSpace
}

func (h *faultFile) Stat() (os.FileInfo, error) {
	if err := h.enterRead("stat"); err != nil {
		return nil, err
	}
	defer h.fs.cutMu.RUnlock()
	return h.f.Stat()
}

func (h *faultFile) Name() string { return h.name }

// OS returns the real file. A power cut or crash does not close it: the
// handle's Close does, so that a goroutine using the descriptor when the
// cut comes (mapping the file, say) is not raced by the cut. The file is
// the dead process's, though: the cut's restore may rewrite it underneath.
func (h *faultFile) OS() *os.File { return h.f }
