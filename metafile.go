package folio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/vfs"
)

// Every small metadata file the Broker owns (format version, checkpoint,
// clean-shutdown marker, producer-state snapshots) has one frame:
//
//	magic [4]byte | version u16 | reserved u16 (0) | payload length u32 |
//	payload | crc u32: CRC-32C of every byte before it
//
// and is written tmp + fsync + rename + fsync(dir), so a reader finds the
// old file or the new one, never a torn mix, and a bit flip is an error
// instead of a silently different value.
const (
	metaHeaderSize  = 12
	metaTrailerSize = 4
	// maxMetaBytes bounds what a reader allocates for a metadata file: a
	// checkpoint of 100,000 partitions with long topic names fits.
	maxMetaBytes = 64 << 20
	tmpSuffix    = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeMeta frames payload.
func encodeMeta(magic string, version uint16, payload []byte) []byte {
	buf := make([]byte, metaHeaderSize+len(payload)+metaTrailerSize)
	copy(buf[0:4], magic)
	binary.BigEndian.PutUint16(buf[4:6], version)
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(payload)))
	copy(buf[metaHeaderSize:], payload)
	n := metaHeaderSize + len(payload)
	binary.BigEndian.PutUint32(buf[n:], crc32.Checksum(buf[:n], castagnoli))
	return buf
}

// decodeMeta checks a frame and returns its version and payload (aliasing
// data). name is the file's name. Any damage is an *errs.Corruption of
// name (matching ErrCorrupt), which locateMeta turns into the file's path;
// a magic number from another file kind (or a file that is no frame)
// wraps ErrUnknownFormat; a damaged magic in a frame whose checksum holds
// with the right one is damage.
func decodeMeta(name, magic string, data []byte) (uint16, []byte, error) {
	if len(data) < metaHeaderSize+metaTrailerSize {
		return 0, nil, errs.Corruptf(ErrCorrupt, name, -1, "%d bytes, shorter than a header", len(data))
	}
	if string(data[0:4]) != magic {
		if framedAs(data, magic) {
			// The frame's checksum holds with the magic this file kind
			// has: the file is one, its magic damaged.
			return 0, nil, errs.Corruptf(ErrCorrupt, name, 0, "magic %q, want %q (the checksum holds with %q: the magic is damaged)", data[0:4], magic, magic)
		}
		return 0, nil, fmt.Errorf("%w: %s: magic %q, want %q", ErrUnknownFormat, name, data[0:4], magic)
	}
	n := binary.BigEndian.Uint32(data[8:12])
	if uint64(n) != uint64(len(data)-metaHeaderSize-metaTrailerSize) {
		return 0, nil, errs.Corruptf(ErrCorrupt, name, 8, "payload length %d, file holds %d", n, len(data)-metaHeaderSize-metaTrailerSize)
	}
	end := metaHeaderSize + int(n)
	want := binary.BigEndian.Uint32(data[end:])
	if got := crc32.Checksum(data[:end], castagnoli); got != want {
		return 0, nil, errs.Corruptf(ErrCorrupt, name, -1, "checksum %08x, want %08x", got, want)
	}
	if r := binary.BigEndian.Uint16(data[6:8]); r != 0 {
		return 0, nil, errs.Corruptf(ErrCorrupt, name, 6, "reserved field %d", r)
	}
	return binary.BigEndian.Uint16(data[4:6]), data[metaHeaderSize:end], nil
}

// framedAs reports whether data is a whole frame whose checksum holds
// with magic in place of its first four bytes.
func framedAs(data []byte, magic string) bool {
	n := binary.BigEndian.Uint32(data[8:12])
	if uint64(n) != uint64(len(data)-metaHeaderSize-metaTrailerSize) || len(magic) != 4 {
		return false
	}
	end := metaHeaderSize + int(n)
	crc := crc32.Update(crc32.Checksum([]byte(magic), castagnoli), castagnoli, data[4:end])
	return crc == binary.BigEndian.Uint32(data[end:])
}

// locateMeta names the metadata file dir/name in an error from decoding
// it: an *errs.Corruption made by decodeMeta or a payload decoder, which
// know only the file's name, gets the full path. The error must be one
// just made by those decoders (never a shared value): its Corruption is
// changed in place. Other errors pass unchanged.
func locateMeta(dir, name string, err error) error {
	if c, ok := errors.AsType[*errs.Corruption](err); ok && c.Path == name {
		c.Path = filepath.Join(dir, name)
	}
	return err
}

// writeMetaFile writes data as dir/name durably (vfs.ReplaceFile: a
// temporary file, fsync, rename over the final name, fsync of dir).
func writeMetaFile(fsys vfs.FS, dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	if err := vfs.ReplaceFile(fsys, final+tmpSuffix, final, data); err != nil {
		return fmt.Errorf("folio: %w", err)
	}
	return nil
}

// readMetaFile reads dir/name whole. A missing file is an error wrapping
// os.ErrNotExist.
func readMetaFile(fsys vfs.FS, dir, name string) ([]byte, error) {
	p := filepath.Join(dir, name)
	f, err := fsys.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("folio: opening %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("folio: %s: %w", p, err)
	}
	if fi.Size() > maxMetaBytes {
		return nil, errs.Corruptf(ErrCorrupt, p, -1, "%d bytes, more than the %d a metadata file may have", fi.Size(), maxMetaBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, fi.Size()), data); err != nil {
		return nil, fmt.Errorf("folio: reading %s: %w", p, err)
	}
	return data, nil
}

// removeDurably removes dir/name and fsyncs dir, so the removal survives a
// power cut. A missing file is not an error.
func removeDurably(fsys vfs.FS, dir, name string) error {
	p := filepath.Join(dir, name)
	if err := fsys.Remove(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("folio: removing %s: %w", p, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("folio: syncing %s after removing %s: %w", dir, name, err)
	}
	return nil
}
