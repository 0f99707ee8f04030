package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileSynced creates or truncates path, writes data, fsyncs and
// closes it: the first half of a durable replace (the caller then renames
// it over the live name and syncs the directory). On any error the file is
// removed again, best effort, and the error returned.
func WriteFileSynced(fsys FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(path)
	}
	return err
}

// ReplaceFile replaces path with data durably and atomically: data is
// written to tmp and fsynced (WriteFileSynced), tmp is renamed over path,
// and path's directory is fsynced. A reader, or a power cut at any point,
// finds path as it was or as data, whole, never a mix or an empty file;
// once ReplaceFile returns nil a power cut keeps data. tmp must be in
// path's directory.
//
// An error from writing tmp leaves path as it was (and no tmp). An error
// from the rename or the directory's fsync wraps ErrReplaceUncertain:
// path may hold either content after a power cut, so a caller that keeps
// state in memory matching the file must not trust it until a later
// ReplaceFile succeeds.
func ReplaceFile(fsys FS, tmp, path string, data []byte) error {
	if err := WriteFileSynced(fsys, tmp, data); err != nil {
		return fmt.Errorf("vfs: writing %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: renaming %s over %s: %w", ErrReplaceUncertain, tmp, path, err)
	}
	dir := filepath.Dir(path)
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("%w: syncing %s after renaming %s: %w", ErrReplaceUncertain, dir, tmp, err)
	}
	return nil
}

// ErrReplaceUncertain marks a ReplaceFile that failed at or after its
// rename: whether the new content survives a power cut is not known.
var ErrReplaceUncertain = errors.New("vfs: the replacement's durability is uncertain")
