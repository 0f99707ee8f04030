package faultfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSyncEntryPersistsOneChange: of two unsynced removals and a create in
// one directory, SyncEntry makes exactly the one it names survive a cut.
func TestSyncEntryPersistsOneChange(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := New()
	for _, n := range []string{"a", "b"} {
		if err := fs.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fs.OpenFile(filepath.Join(dir, "c"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := fs.UnsyncedEntries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("UnsyncedEntries = %v, want %v", got, want)
	}
	if err := fs.SyncEntry(dir, "b"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncEntry(dir, "c"); err != nil {
		t.Fatal(err)
	}
	if got, _ := fs.UnsyncedEntries(dir); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("UnsyncedEntries after SyncEntry = %v, want [a]", got)
	}
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	for n, want := range map[string]string{"a": "a", "b": "", "c": "c"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		switch {
		case want == "" && !os.IsNotExist(err):
			t.Fatalf("%s after the cut: %q, %v; want it gone", n, data, err)
		case want != "" && (err != nil || string(data) != want):
			t.Fatalf("%s after the cut: %q, %v; want %q", n, data, err, want)
		}
	}
}
