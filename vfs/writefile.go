package vfs

import "os"

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
