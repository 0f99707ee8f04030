//go:build !windows

package vfs

import "os"

// syncDir fsyncs the directory itself, which is what persists the entries
// created, renamed or removed in it (Linux, macOS, the BSDs).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
