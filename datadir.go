package folio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// Files of a data directory that belong to the Broker (the topic catalog,
// topic.CatalogFile, belongs to the topic package; partition directories
// to the log package).
const (
	// LockFile is flocked by the one Broker that writes the directory; it
	// holds the holder's pid and host, for the error a second one gets.
	LockFile = ".lock"
	// FormatFile records the on-disk format version of the directory.
	FormatFile = "folio.format"
	// CheckpointFile holds every partition's recovery point, log start
	// offset and, for compacted partitions, cleaner checkpoint (Kafka's
	// recovery-point-offset-checkpoint, log-start-offset-checkpoint and
	// cleaner-offset-checkpoint in one file).
	CheckpointFile = "partitions.checkpoint"
	// ClusterFile marks a directory a Broker has opened with
	// ClusterOptions, with that broker's id: its topics may be replicas of
	// a cluster's, so a later Open never adopts them into a cluster's
	// metadata as a single broker's own (see cluster.adoptStandalone).
	ClusterFile = "cluster.member"
	// CleanShutdownFile exists while the directory is known consistent:
	// written at a clean Close, removed durably before the first write of
	// the next session.
	CleanShutdownFile = ".clean-shutdown"
	// producerStateDir holds producer-state snapshots written at a clean
	// Close, one per partition that had idempotent producers. Its name is
	// not a partition directory name (topic.ParseDirName refuses it), so
	// the catalog leaves it alone.
	producerStateDir = ".producer-state"
)

// FormatVersion is the on-disk format version this code reads and writes.
// Version 1: RecordBatch v2 segments with Kafka's index formats, the topic
// catalog, and the metadata files described in this file.
const FormatVersion = 1

const (
	formatMagic     = "FOLI"
	checkpointMagic = "FCHK"
	cleanMagic      = "FCLN"
	snapshotMagic   = "FPSS"
	clusterMagic    = "FCLU"

	// checkpointVersion is the version written. Version 1 had no
	// firstDirtyOffset, version 2 no highWatermark; both are still read
	// (see decodeCheckpoint).
	checkpointVersion = 3
	cleanVersion      = 1
	snapshotVersion   = 1
	clusterVersion    = 1
)

// checkFormat makes sure dir is a Folio data directory of a known format,
// initializing an empty (or new) one when create is set. It returns whether
// the directory was initialized now.
func checkFormat(fsys vfs.FS, dir string, create bool) (fresh bool, err error) {
	data, err := readMetaFile(fsys, dir, FormatFile)
	if err == nil {
		v, payload, err := decodeMeta(FormatFile, formatMagic, data)
		if errors.Is(err, ErrCorrupt) {
			return false, locateMeta(dir, FormatFile, err)
		}
		if err != nil {
			return false, fmt.Errorf("%w (data directory %s)", err, dir)
		}
		if v != FormatVersion {
			return false, fmt.Errorf("%w: %s: format version %d, this Folio knows version %d (written by a newer Folio?)",
				ErrUnknownFormat, dir, v, FormatVersion)
		}
		if string(payload) != formatPayload {
			return false, errs.Corruptf(ErrCorrupt, filepath.Join(dir, FormatFile), metaHeaderSize, "payload %q, want %q", payload, formatPayload)
		}
		return false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	// No format file: only an empty directory may become a data directory,
	// so that Open never adopts (and later repairs) someone else's files.
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("folio: listing %s: %w", dir, err)
	}
	for _, e := range entries {
		switch e.Name() {
		case LockFile, FormatFile + tmpSuffix:
			continue // left by an Open that crashed before its format file
		}
		return false, fmt.Errorf("%w: %s has no %s but holds %q: not a Folio data directory",
			ErrUnknownFormat, dir, FormatFile, e.Name())
	}
	if !create {
		return false, fmt.Errorf("%w: %s is not a Folio data directory (no %s)", ErrUnknownFormat, dir, FormatFile)
	}
	if err := writeMetaFile(fsys, dir, FormatFile, encodeMeta(formatMagic, FormatVersion, []byte(formatPayload))); err != nil {
		return false, err
	}
	return true, nil
}

// formatPayload makes the format file self-describing for someone who
// opens it with a hex dump.
const formatPayload = "folio data directory"

// partKey names a partition of one incarnation of a topic: a topic deleted
// and created again under its name gets a new id, so a stale checkpoint
// entry can never vouch for a new log.
type partKey struct {
	id        topic.ID
	partition int32
}

// checkpointEntry is one partition's line in the checkpoint file.
type checkpointEntry struct {
	topic          string // for humans and tools; the key is the id
	id             topic.ID
	partition      int32
	recoveryPoint  int64
	logStartOffset int64
	// firstDirtyOffset is the cleaner checkpoint of a compacted log
	// (log.State.FirstDirtyOffset, Kafka's cleaner-offset-checkpoint);
	// zero for other logs and in entries read from a version 1 file.
	firstDirtyOffset int64
	// highWatermark is the partition's high watermark (Kafka's
	// replication-offset-checkpoint), restored only for a partition whose
	// high watermark is set from outside (replication), so that a
	// restarted replica exposes no record that was never committed; zero
	// in entries read from a version 1 or 2 file (nothing exposed until
	// replication sets it again: the safe answer).
	highWatermark int64
}

// encodeCheckpoint lays out the payload (version 3):
//
//	count u32, then per entry: id [16]byte | partition i32 |
//	recoveryPoint i64 | logStartOffset i64 | firstDirtyOffset i64 |
//	highWatermark i64 | name length u16 | name
//
// sorted by (name, partition) so equal states give equal files. Version 2
// was the same without highWatermark, version 1 also without
// firstDirtyOffset.
func encodeCheckpoint(entries []checkpointEntry) []byte {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].topic != entries[j].topic {
			return entries[i].topic < entries[j].topic
		}
		return entries[i].partition < entries[j].partition
	})
	size := 4
	for _, e := range entries {
		size += checkpointFixedV3 + len(e.topic)
	}
	p := make([]byte, 0, size)
	p = binary.BigEndian.AppendUint32(p, uint32(len(entries)))
	for _, e := range entries {
		p = append(p, e.id[:]...)
		p = binary.BigEndian.AppendUint32(p, uint32(e.partition))
		p = binary.BigEndian.AppendUint64(p, uint64(e.recoveryPoint))
		p = binary.BigEndian.AppendUint64(p, uint64(e.logStartOffset))
		p = binary.BigEndian.AppendUint64(p, uint64(e.firstDirtyOffset))
		p = binary.BigEndian.AppendUint64(p, uint64(e.highWatermark))
		p = binary.BigEndian.AppendUint16(p, uint16(len(e.topic)))
		p = append(p, e.topic...)
	}
	return encodeMeta(checkpointMagic, checkpointVersion, p)
}

// Fixed bytes of one checkpoint entry (everything but the name), by
// version.
const (
	checkpointFixedV1 = 16 + 4 + 8 + 8 + 2
	checkpointFixedV2 = checkpointFixedV1 + 8
	checkpointFixedV3 = checkpointFixedV2 + 8
)

// decodeCheckpoint parses a checkpoint file of version 1, 2 or 3. Every
// structural problem is ErrCorrupt: a checkpoint that lies would let
// recovery skip a torn tail; it is an *errs.Corruption of CheckpointFile
// at the byte where the bad entry starts (see locateMeta). A version 1
// entry has no cleaner checkpoint:
// its firstDirtyOffset is zero, which the log takes as "nothing cleaned"
// (the safe answer: a full cleaning, tombstones kept longer).
func decodeCheckpoint(data []byte) (map[partKey]checkpointEntry, error) {
	v, p, err := decodeMeta(CheckpointFile, checkpointMagic, data)
	if err != nil {
		return nil, err
	}
	var fixed uint64
	switch v {
	case 1:
		fixed = checkpointFixedV1
	case 2:
		fixed = checkpointFixedV2
	case 3:
		fixed = checkpointFixedV3
	default:
		return nil, fmt.Errorf("%w: %s version %d, this Folio knows 1 to %d", ErrUnknownFormat, CheckpointFile, v, checkpointVersion)
	}
	payload := len(p)
	// bad reports damage at the start of what p holds now.
	bad := func(format string, args ...any) error {
		return errs.Corruptf(ErrCorrupt, CheckpointFile, int64(metaHeaderSize+payload-len(p)), format, args...)
	}
	if len(p) < 4 {
		return nil, bad("payload of %d bytes has no entry count", len(p))
	}
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(n)*fixed > uint64(len(p)) {
		return nil, bad("%d entries cannot fit in %d bytes", n, len(p))
	}
	out := make(map[partKey]checkpointEntry, n)
	for i := uint32(0); i < n; i++ {
		if uint64(len(p)) < fixed {
			return nil, bad("entry %d truncated", i)
		}
		var e checkpointEntry
		copy(e.id[:], p[:16])
		e.partition = int32(binary.BigEndian.Uint32(p[16:]))
		e.recoveryPoint = int64(binary.BigEndian.Uint64(p[20:]))
		e.logStartOffset = int64(binary.BigEndian.Uint64(p[28:]))
		q := p[36:]
		if v >= 2 {
			e.firstDirtyOffset = int64(binary.BigEndian.Uint64(q))
			q = q[8:]
		}
		if v >= 3 {
			e.highWatermark = int64(binary.BigEndian.Uint64(q))
			q = q[8:]
		}
		nl := int(binary.BigEndian.Uint16(q))
		p = p[fixed:]
		if len(p) < nl {
			return nil, bad("entry %d: name of %d bytes truncated", i, nl)
		}
		e.topic = string(p[:nl])
		p = p[nl:]
		if e.partition < 0 || e.recoveryPoint < 0 || e.logStartOffset < 0 || e.firstDirtyOffset < 0 || e.highWatermark < 0 {
			return nil, bad("entry %d (%s-%d): negative field", i, e.topic, e.partition)
		}
		k := partKey{e.id, e.partition}
		if _, dup := out[k]; dup {
			return nil, bad("entry %d (%s-%d) repeats a partition", i, e.topic, e.partition)
		}
		out[k] = e
	}
	if len(p) != 0 {
		return nil, bad("%d bytes after the last entry", len(p))
	}
	return out, nil
}

// readCheckpoint returns the checkpoint entries of dir, none if there is
// no checkpoint file yet.
func readCheckpoint(fsys vfs.FS, dir string) (map[partKey]checkpointEntry, error) {
	data, err := readMetaFile(fsys, dir, CheckpointFile)
	if errors.Is(err, os.ErrNotExist) {
		return map[partKey]checkpointEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := decodeCheckpoint(data)
	if errors.Is(err, ErrCorrupt) {
		return nil, locateMeta(dir, CheckpointFile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (data directory %s)", err, dir)
	}
	return m, nil
}

// encodeCleanMarker records when the clean shutdown happened; only the
// marker's existence (and integrity) matters to recovery.
func encodeCleanMarker(at time.Time) []byte {
	return encodeMeta(cleanMagic, cleanVersion, binary.BigEndian.AppendUint64(nil, uint64(at.UnixMilli())))
}

// readCleanMarker reports whether dir holds a valid clean-shutdown marker.
// A damaged marker counts as absent (the safe answer: recovery scans) and
// is reported through damaged so the caller can log it.
func readCleanMarker(fsys vfs.FS, dir string) (clean bool, at time.Time, damaged error) {
	data, err := readMetaFile(fsys, dir, CleanShutdownFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	v, p, err := decodeMeta(CleanShutdownFile, cleanMagic, data)
	if err != nil {
		return false, time.Time{}, locateMeta(dir, CleanShutdownFile, err)
	}
	if v != cleanVersion || len(p) != 8 {
		return false, time.Time{}, errs.Corruptf(ErrCorrupt, filepath.Join(dir, CleanShutdownFile), 4, "version %d with %d payload bytes", v, len(p))
	}
	return true, time.UnixMilli(int64(binary.BigEndian.Uint64(p))), nil
}
