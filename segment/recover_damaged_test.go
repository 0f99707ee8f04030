package segment

import (
	"bytes"
	"io"
	"testing"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs/faultfs"
)

// TestRecoverRewriteDamagedOnlyOnDamage: RecoverRewriteDamaged leaves a
// valid .log alone (the rewrite is never called, no replacement file is
// made, the scan stands and the indexes are the rule's), and hands a
// damaged one to the rewrite, whose replacement is then recovered as by
// RecoverRewrite.
func TestRecoverRewriteDamagedOnlyOnDamage(t *testing.T) {
	rng := testRand(t)
	opts := &Options{IndexIntervalBytes: 300}
	c, m := sealedSegment(t, rng, 60, opts)

	t.Run("valid", func(t *testing.T) {
		dir := segDir(t)
		writeSegmentFiles(t, dir, 0, c)
		ffs := faultfs.New()
		ops := watchOps(ffs, LogPath(dir, 0)+TruncateSuffix)
		s, err := Open(ffs, dir, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		calls := 0
		res, err := s.RecoverRewriteDamaged(func(io.ReaderAt, int64, io.Writer) (bool, error) {
			calls++
			return false, nil
		}, false)
		ffs.SetHook(nil)
		if err != nil || res.BytesCut != 0 || res.ValidBytes != int64(len(c.log)) {
			t.Fatalf("RecoverRewriteDamaged = %+v, %v", res, err)
		}
		if calls != 0 {
			t.Fatalf("the rewrite ran %d times on a valid .log", calls)
		}
		// (Recovery removes a leftover replacement, if any: a remove of
		// a missing file is all that may happen to its name.)
		if k := ops.kinds(LogPath(dir, 0) + TruncateSuffix); k[faultfs.OpCreate]+k[faultfs.OpOpen]+k[faultfs.OpWrite]+k[faultfs.OpRename] != 0 {
			t.Fatalf("a replacement file was made for a valid .log: %v", k)
		}
		checkAgainst(t, s, m)
	})

	t.Run("damaged", func(t *testing.T) {
		// Flip a byte of the payload of a batch in the middle: its CRC
		// fails. The rewrite keeps the batches before it only.
		var starts []int
		for pos := 0; pos < len(c.log); {
			n, err := record.CheckHeader(c.log[pos:])
			if err != nil {
				t.Fatal(err)
			}
			starts = append(starts, pos)
			pos += n
		}
		if len(starts) < 3 {
			t.Fatalf("%d batches", len(starts))
		}
		bad := starts[len(starts)/2]
		damaged := bytes.Clone(c.log)
		damaged[starts[len(starts)/2+1]-1] ^= 0xff
		dir := segDir(t)
		writeSegmentFiles(t, dir, 0, crashFiles{log: damaged, off: c.off, time: c.time})
		s, err := Open(testFS, dir, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		calls := 0
		res, err := s.RecoverRewriteDamaged(func(r io.ReaderAt, size int64, w io.Writer) (bool, error) {
			calls++
			if size != int64(len(damaged)) {
				t.Errorf("the rewrite got %d bytes, the file has %d", size, len(damaged))
			}
			_, err := io.Copy(w, io.NewSectionReader(r, 0, int64(bad)))
			return true, err
		}, false)
		if err != nil || calls != 1 {
			t.Fatalf("RecoverRewriteDamaged = %+v, %v after %d rewrites", res, err, calls)
		}
		if res.BytesCut != 0 || res.ValidBytes != int64(bad) || res.Batches != len(starts)/2 {
			t.Fatalf("after the rewrite: %+v, want %d valid bytes in %d batches and nothing cut", res, bad, len(starts)/2)
		}
	})
}
