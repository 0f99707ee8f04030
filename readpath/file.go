package readpath

import (
	"io"
	"os"
)

// File is the part of a vfs file this package uses. vfs's File
// satisfies it; so does an *os.File through OSFile. Keeping the interface
// here lets readpath sit below vfs without importing it.
type File interface {
	io.ReaderAt
	io.Closer
	Stat() (os.FileInfo, error)
	// Name is used in error messages only.
	Name() string
	// OS returns the descriptor behind the file, or nil for a file that has
	// none (an in-memory test file). Mmap sources require it; Sendfile
	// sources without it always take the copying path.
	OS() *os.File
}

// OSFile adapts an *os.File to File, for tools and tests that open segment
// files directly rather than through vfs.
func OSFile(f *os.File) File { return osFile{f} }

type osFile struct{ *os.File }

func (f osFile) OS() *os.File { return f.File }
