package index

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/errs"
)

// TestCorruptIndexNamesItsFile: each kind of damage the open-time check
// finds in an offset or a time index is an *errs.Corruption naming that
// file, matching ErrCorrupt and errs.ErrCorrupt.
func TestCorruptIndexNamesItsFile(t *testing.T) {
	open := map[string]func(path string) error{
		"offset": func(path string) error {
			x, err := OpenOffset(nil, path, 100, false, nil)
			if err == nil {
				x.Close()
			}
			return err
		},
		"time": func(path string) error {
			x, err := OpenTime(nil, path, 100, false, nil)
			if err == nil {
				x.Close()
			}
			return err
		},
	}
	for _, c := range []struct {
		name, kind string
		data       []byte
	}{
		{"offset: torn entry", "offset", offsetFile([2]uint32{0, 0})[:5]},
		{"offset: last below first", "offset", offsetFile([2]uint32{5, 10}, [2]uint32{1, 20})},
		{"offset: position backwards", "offset", offsetFile([2]uint32{1, 50}, [2]uint32{5, 10})},
		{"time: torn entry", "time", timeFile([2]int64{10, 0})[:11]},
		{"time: timestamps backwards", "time", timeFile([2]int64{10, 0}, [2]int64{5, 3})},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "00000000000000000100."+c.kind+"index")
			mustNil(t, "WriteFile", os.WriteFile(path, c.data, 0o644))
			err := open[c.kind](path)
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) {
				t.Fatalf("%v: not ErrCorrupt and errs.ErrCorrupt", err)
			}
			var ce *errs.Corruption
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("%v: no *errs.Corruption naming %s", err, path)
			}
		})
	}
}

// TestClosedIsTheSharedClass: a call after Close matches ErrClosed and
// errs.ErrClosed.
func TestClosedIsTheSharedClass(t *testing.T) {
	x, err := OpenOffset(nil, filepath.Join(t.TempDir(), "0.index"), 0, true, nil)
	mustNil(t, "OpenOffset", err)
	mustNil(t, "Close", x.Close())
	if err := x.Close(); !errors.Is(err, ErrClosed) || !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}
