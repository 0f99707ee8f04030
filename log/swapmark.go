package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// SwapCommitFile is the name of the swap-commit marker in a log's
// directory: a compaction pass writes it, and fsyncs it, before the first
// rename of its swap, and removes it once the swap is done. It names each
// cleaned segment of the pass with the offsets it replaces and the size
// and CRC-32C of its .log. A leftover .log.swap file takes the place of
// live segments at Open only when the marker vouches for it (same size,
// same checksum) and its batches are valid and end exactly where the range
// it replaces ends; any other .log.swap is discarded and the live segments
// kept (see CheckSwaps).
const SwapCommitFile = "swap.commit"

// swapMagic starts a swap-commit marker; the version byte follows.
const (
	swapMagic   = "FOLIOSWP"
	swapVersion = 1
	swapEntry   = 8 + 8 + 8 + 4 // base, end, size, crc
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// swapCommit is one cleaned segment a swap-commit marker vouches for: its
// .log holds size bytes with CRC-32C crc, and replaces the segments with
// bases in [base, end).
type swapCommit struct {
	base, end, size int64
	crc             uint32
}

func encodeSwapCommits(cs []swapCommit) []byte {
	b := make([]byte, 0, len(swapMagic)+1+4+len(cs)*swapEntry+4)
	b = append(b, swapMagic...)
	b = append(b, swapVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cs)))
	for _, c := range cs {
		b = binary.BigEndian.AppendUint64(b, uint64(c.base))
		b = binary.BigEndian.AppendUint64(b, uint64(c.end))
		b = binary.BigEndian.AppendUint64(b, uint64(c.size))
		b = binary.BigEndian.AppendUint32(b, c.crc)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeSwapCommits(b []byte) (map[int64]swapCommit, error) {
	head := len(swapMagic) + 1 + 4
	if len(b) < head+4 || string(b[:len(swapMagic)]) != swapMagic {
		return nil, errors.New("not a swap-commit marker")
	}
	if v := b[len(swapMagic)]; v != swapVersion {
		return nil, fmt.Errorf("swap-commit marker version %d, this code reads %d", v, swapVersion)
	}
	if sum := binary.BigEndian.Uint32(b[len(b)-4:]); sum != crc32.Checksum(b[:len(b)-4], castagnoli) {
		return nil, errors.New("swap-commit marker checksum mismatch")
	}
	n := int(binary.BigEndian.Uint32(b[len(swapMagic)+1:]))
	if n < 0 || len(b) != head+n*swapEntry+4 {
		return nil, fmt.Errorf("swap-commit marker of %d bytes cannot hold %d entries", len(b), n)
	}
	out := make(map[int64]swapCommit, n)
	for i := range n {
		e := b[head+i*swapEntry:]
		c := swapCommit{
			base: int64(binary.BigEndian.Uint64(e)),
			end:  int64(binary.BigEndian.Uint64(e[8:])),
			size: int64(binary.BigEndian.Uint64(e[16:])),
			crc:  binary.BigEndian.Uint32(e[24:]),
		}
		if c.base < 0 || c.end <= c.base || c.size <= 0 {
			return nil, fmt.Errorf("swap-commit marker entry %d (base %d, end %d, size %d) is impossible", i, c.base, c.end, c.size)
		}
		out[c.base] = c
	}
	return out, nil
}

// writeSwapCommit makes the swap-commit marker of a pass durable: written
// and fsynced under a temporary name, renamed into place, the directory
// fsynced. The swap's renames begin only after it.
func (p *pass) writeSwapCommit() error {
	cs := make([]swapCommit, len(p.groups))
	for gi, g := range p.groups {
		w := p.writers[gi]
		cs[gi] = swapCommit{base: g.base, end: g.end, size: w.pos, crc: w.crc}
	}
	fsys, dir := p.l.fs, p.l.dir
	path := filepath.Join(dir, SwapCommitFile)
	if err := vfs.ReplaceFile(fsys, path+".tmp", path, encodeSwapCommits(cs)); err != nil {
		return fmt.Errorf("log: compaction: %w", err)
	}
	return nil
}

// removeSwapCommit removes the marker once every .swap has its live name
// (and that is durable). A marker left behind vouches for no file that
// exists, and Open removes it.
func (p *pass) removeSwapCommit() error {
	err := p.l.fs.Remove(filepath.Join(p.l.dir, SwapCommitFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log: compaction: remove %s: %w", SwapCommitFile, err)
	}
	return nil
}

// readSwapCommits reads the marker in dir: nil, nil when there is none; a
// damaged one is an *errs.Corruption naming it.
func readSwapCommits(fsys vfs.FS, dir string) (map[int64]swapCommit, error) {
	path := filepath.Join(dir, SwapCommitFile)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("log: stat %s: %w", path, err)
	}
	if fi.Size() > 1<<24 {
		return nil, errs.Corruptf(ErrCorrupt, path, -1, "%d bytes, more than any swap-commit marker", fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("log: read %s: %w", path, err)
	}
	cs, err := decodeSwapCommits(data)
	if err != nil {
		return nil, errs.Corrupt(ErrCorrupt, path, -1, err)
	}
	return cs, nil
}

// checkSwap reports whether the .log.swap at base in dir is the complete
// cleaned segment that c vouches for: the same size and CRC-32C, every
// batch valid (header, CRC, offsets ascending from base), and the last
// one ending right before c.end. nil means it may take the place of the
// segments in [c.base, c.end); otherwise the error (an *errs.Corruption
// naming the file) says why not.
func checkSwap(fsys vfs.FS, dir string, base int64, c swapCommit, ok bool) error {
	path := filepath.Join(dir, segment.FileName(base, segment.LogSuffix+swapSuffix))
	if !ok {
		return errs.Corruptf(ErrCorrupt, path, -1, "no swap-commit marker vouches for it (not a finished compaction swap)")
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("log: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("log: stat %s: %w", path, err)
	}
	if fi.Size() != c.size {
		return errs.Corruptf(ErrCorrupt, path, -1, "%d bytes, the swap-commit marker says %d", fi.Size(), c.size)
	}
	crc := uint32(0)
	prev := base - 1
	var buf []byte
	var hdr [record.HeaderSize]byte
	for pos := int64(0); pos < c.size; {
		if c.size-pos < record.HeaderSize {
			return errs.Corruptf(ErrCorrupt, path, pos, "%d stray bytes at the end", c.size-pos)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("log: read %s at %d: %w", path, pos, err)
		}
		size, err := record.CheckHeader(hdr[:])
		if err != nil {
			return errs.Corrupt(ErrCorrupt, path, pos, err)
		}
		if pos+int64(size) > c.size {
			return errs.Corruptf(ErrCorrupt, path, pos, "batch of %d bytes runs past the end (%d)", size, c.size)
		}
		h := record.Batch(hdr[:])
		if h.BaseOffset() <= prev {
			return errs.Corruptf(ErrCorrupt, path, pos, "base offset %d does not follow %d", h.BaseOffset(), prev)
		}
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		b := record.Batch(buf[:size])
		if _, err := f.ReadAt(b, pos); err != nil {
			return fmt.Errorf("log: read %s at %d: %w", path, pos, err)
		}
		if err := b.Validate(); err != nil {
			return errs.Corrupt(ErrCorrupt, path, pos, err).AtOffset(h.BaseOffset())
		}
		crc = crc32.Update(crc, castagnoli, b)
		prev = b.LastOffset()
		pos += int64(size)
	}
	if crc != c.crc {
		return errs.Corruptf(ErrCorrupt, path, -1, "CRC-32C %08x, the swap-commit marker says %08x", crc, c.crc)
	}
	if prev+1 != c.end {
		return errs.Corruptf(ErrCorrupt, path, -1, "its batches end at offset %d, the range it replaces at %d", prev+1, c.end)
	}
	return nil
}

// SwapCheck is what CheckSwaps found about one .log.swap file.
type SwapCheck struct {
	// Path is the .log.swap file.
	Path string
	// Base is its base offset; End the offset where the range it replaces
	// ends (the swap-commit marker's word), 0 when unknown.
	Base, End int64
	// Complete is true when Open would rename it into place, replacing the
	// live segments in [Base, End).
	Complete bool
	// Unfinished is true when it belongs to a swap whose first step a
	// crash interrupted (a .cleaned file at or below its base): Open
	// removes it and keeps the live segments, as planned.
	Unfinished bool
	// Err, for a file neither complete nor unfinished, says why Open
	// discards it (an *errs.Corruption naming the file): it is damage, or
	// a file that is no part of this log.
	Err error
}

// CheckSwaps checks the leftover .log.swap files of the log in dir by the
// rules Open applies, changing nothing (read-only, pread only). A nil fsys
// means vfs.Default. MarkerErr is a damaged swap-commit marker, if any
// (every swap is then unproven).
func CheckSwaps(fsys vfs.FS, dir string) (checks []SwapCheck, markerErr error, err error) {
	if fsys == nil {
		fsys = vfs.Default
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("log: list %s: %w", dir, err)
	}
	var swaps []int64
	minClean := int64(-1)
	for _, de := range ents {
		base, suffix, ok := segment.ParseFileName(de.Name())
		if !ok || de.IsDir() {
			continue
		}
		switch {
		case suffix == segment.LogSuffix+swapSuffix:
			swaps = append(swaps, base)
		case strings.HasSuffix(suffix, cleanedSuffix):
			if minClean < 0 || base < minClean {
				minClean = base
			}
		}
	}
	if minClean < 0 {
		minClean = math.MaxInt64
	}
	return classifySwaps(fsys, dir, swaps, minClean)
}

// classifySwaps is CheckSwaps on a listing: the bases of the .log.swap
// files and the smallest base of a .cleaned file (math.MaxInt64: none).
func classifySwaps(fsys vfs.FS, dir string, swaps []int64, minClean int64) (checks []SwapCheck, markerErr error, err error) {
	if len(swaps) == 0 {
		return nil, nil, nil
	}
	cs, markerErr := readSwapCommits(fsys, dir)
	if markerErr != nil && !errors.Is(markerErr, errs.ErrCorrupt) {
		return nil, nil, markerErr
	}
	slices.Sort(swaps)
	for _, b := range swaps {
		path := filepath.Join(dir, segment.FileName(b, segment.LogSuffix+swapSuffix))
		c, ok := cs[b]
		sc := SwapCheck{Path: path, Base: b, End: c.end}
		if b >= minClean {
			sc.Unfinished = true
		} else {
			sc.Err = checkSwap(fsys, dir, b, c, ok)
			if sc.Err != nil && !errors.Is(sc.Err, errs.ErrCorrupt) {
				return nil, markerErr, sc.Err
			}
			sc.Complete = sc.Err == nil
		}
		checks = append(checks, sc)
	}
	return checks, markerErr, nil
}
