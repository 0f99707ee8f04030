package folio

import (
	"os"
	"strings"
	"testing"

	"github.com/foliolog/folio/vfs"
)

// The NoWrite pair is BenchmarkPeerAppend and BenchmarkPeerAppendLog with
// the segment files' writes dropped (discardLogFS): what is left is the CPU
// each layer spends in user space per record, with none of the kernel's
// write, whose cost varies from run to run with the page cache by more
// than the producer's bookkeeping weighs. A diagnostic for comparing two
// versions of the producing path, not a figure of what appending costs.
// Nothing reads the segments back, so the batches are not counted.

func BenchmarkPeerAppendNoWrite(b *testing.B) {
	benchPeerAppend(b, b.TempDir(), discardLogFS{vfs.Default})
}

func BenchmarkPeerAppendLogNoWrite(b *testing.B) { benchPeerAppendLog(b, discardLogFS{vfs.Default}) }

// discardLogFS is an FS whose .log files drop what is written to them.
type discardLogFS struct{ vfs.FS }

func (d discardLogFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return discardFile{f}, nil
}

type discardFile struct{ vfs.File }

func (discardFile) Write(p []byte) (int, error)            { return len(p), nil }
func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
