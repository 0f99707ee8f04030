package folio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// The functions in this file read a data directory's metadata files
// without opening it: no lock, nothing written. Tools (the CLI's verify and
// dump commands) use them beside a live Broker.

// CheckpointEntry is one partition's line in a data directory's
// CheckpointFile.
type CheckpointEntry struct {
	Topic string
	// TopicID identifies the incarnation of the topic the entry belongs
	// to; an entry whose id the catalog no longer holds is stale (the
	// topic was deleted, perhaps created again).
	TopicID        topic.ID
	Partition      int32
	RecoveryPoint  int64
	LogStartOffset int64
	// FirstDirtyOffset is the cleaner checkpoint of a compacted partition:
	// every record below it has been through a cleaning pass. Zero for a
	// partition that is not compacted, and in a checkpoint file written
	// before Folio compacted (version 1).
	FirstDirtyOffset int64
	// HighWatermark is the partition's high watermark when the checkpoint
	// was written; the log restores it only when replication sets its high
	// watermark. Zero in a checkpoint file of version 1 or 2.
	HighWatermark int64
}

// CheckFormat reports whether dir is a Folio data directory of a format
// version this code reads: nil, or an error wrapping ErrUnknownFormat (no
// FormatFile, or a newer version) or ErrCorrupt.
func CheckFormat(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("folio: data directory %s: %w", dir, err)
	}
	_, err := checkFormat(readOnlyFS{vfs.Default}, dir, false)
	return err
}

// ReadCheckpoint returns the entries of dir's CheckpointFile, sorted by
// topic and partition; none if the directory has no checkpoint yet.
func ReadCheckpoint(dir string) ([]CheckpointEntry, error) {
	m, err := readCheckpoint(vfs.Default, dir)
	if err != nil {
		return nil, err
	}
	out := make([]CheckpointEntry, 0, len(m))
	for _, e := range m {
		out = append(out, CheckpointEntry{Topic: e.topic, TopicID: e.id, Partition: e.partition,
			RecoveryPoint: e.recoveryPoint, LogStartOffset: e.logStartOffset, FirstDirtyOffset: e.firstDirtyOffset,
			HighWatermark: e.highWatermark})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// CheckMetadata checks the frame and checksum of every metadata file the
// Broker owns in dir (FormatFile, CheckpointFile, CleanShutdownFile and the
// producer-state snapshots) and returns one error per damaged file, each
// naming it; nil when all are sound. Missing optional files are not errors;
// a missing FormatFile is. The topic catalog is the topic package's to
// check, the segments the segment package's.
func CheckMetadata(dir string) []error {
	var errs []error
	if err := CheckFormat(dir); err != nil {
		errs = append(errs, err)
	}
	if _, err := readCheckpoint(vfs.Default, dir); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := readCleanMarker(vfs.Default, dir); err != nil {
		errs = append(errs, fmt.Errorf("%w (data directory %s)", err, dir))
	}
	sdir := filepath.Join(dir, producerStateDir)
	entries, err := os.ReadDir(sdir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("folio: listing %s: %w", sdir, err))
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), snapshotSuffix) {
			continue // a temporary file of an interrupted write
		}
		data, err := readMetaFile(vfs.Default, sdir, e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, err := topic.NewProducerState(nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := st.LoadSnapshot(data); err != nil {
			errs = append(errs, snapshotErr(filepath.Join(sdir, e.Name()), err))
		}
	}
	return errs
}

// snapshotErr reports a producer-state snapshot at path that does not load:
// damage as an *errs.Corruption naming the file, anything else (a newer
// version) with the file's name in front.
func snapshotErr(path string, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return errs.Corrupt(ErrCorrupt, path, -1, err)
	}
	return fmt.Errorf("folio: producer-state snapshot %s: %w", path, err)
}
