package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// The read commands (consume without a group, dump, verify, topics list and
// describe) must work beside a live Broker without its lock and must not
// change anything, so they read the metadata through the read-only entry
// points of the packages that own it (folio.CheckFormat,
// folio.ReadCheckpoint, a read-only topic.Catalog) and the segment files
// themselves (logfile.go, partread.go). folio.OpenReadOnly is not used: it
// sees each partition as of its open, and a following consume must see
// what another process appends later.

// dataDir is a read-only view of a data directory, as it was when read.
type dataDir struct {
	path   string
	topics []topic.Info // by name
	// starts holds the log start offsets of the checkpoint file, which the
	// owner writes periodically and whenever DeleteRecordsBefore moves a
	// start; the first segment's base bounds the start too.
	starts map[partKey]int64
}

// partKey names a partition of one incarnation of a topic.
type partKey struct {
	id        topic.ID
	partition int32
}

// openDataDir reads the metadata of the data directory at path without
// taking its lock and without writing anything.
func openDataDir(path string) (*dataDir, error) {
	if err := checkFormat(path); err != nil {
		return nil, err
	}
	d := &dataDir{path: path}
	var err error
	if d.topics, err = readCatalog(path); err != nil {
		return nil, err
	}
	if d.starts, err = readStarts(path); err != nil {
		return nil, err
	}
	return d, nil
}

// checkFormat makes sure path is a Folio data directory of a format this
// build reads; a missing one is ErrNoDataDir.
func checkFormat(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist", ErrNoDataDir, path)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrNoDataDir, path)
	}
	if err := folio.CheckFormat(path); err != nil {
		if errors.Is(err, folio.ErrUnknownFormat) {
			return classify(ErrNoDataDir, err) // its message says so already
		}
		return err
	}
	return nil
}

// readCatalog reads the topic catalog through a read-only Catalog, which
// repairs nothing. A directory without one (a Broker between writing its
// format file and its catalog) has no topics.
func readCatalog(dir string) ([]topic.Info, error) {
	cat, err := topic.OpenCatalog(dir, &topic.Options{ReadOnly: true})
	if errors.Is(err, topic.ErrNoCatalog) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	return cat.List()
}

// readStarts returns the log start offsets of the checkpoint file. Entries
// of deleted topics carry ids the catalog no longer holds and are never
// looked up.
func readStarts(dir string) (map[partKey]int64, error) {
	entries, err := folio.ReadCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[partKey]int64, len(entries))
	for _, e := range entries {
		out[partKey{e.TopicID, e.Partition}] = e.LogStartOffset
	}
	return out, nil
}

// topic returns the named topic.
func (d *dataDir) topic(name string) (topic.Info, error) {
	for _, in := range d.topics {
		if in.Name == name {
			return in, nil
		}
	}
	if err := checkTopicName(name); err != nil {
		return topic.Info{}, err
	}
	return topic.Info{}, unknownTopic(name, d.path)
}

// unknownTopic is the one message for a topic the catalog of dir does not
// hold, whether a read command found it missing in the files or the Broker
// said so (folio.ErrUnknownTopic).
func unknownTopic(name, dir string) error {
	return fmt.Errorf("%w %q in %s", ErrUnknownTopic, name, dir)
}

// checkTopicName refuses names no topic can have, so that a typo gets the
// rule it broke rather than "unknown topic".
func checkTopicName(name string) error {
	if topic.IsInternal(name) {
		return topic.ValidateInternalName(name)
	}
	return topic.ValidateName(name)
}

// checkPartitionFlag refuses a -partition that is neither -1 (all) nor a
// partition number.
func checkPartitionFlag(p int) error {
	if p < -1 || p > topic.MaxPartitions {
		return usagef("-partition %d: want a partition number, or -1 for all", p)
	}
	return nil
}

// partitions returns the partitions a command names: all of the topic's
// when p is -1.
func partitions(in topic.Info, p int32) ([]int32, error) {
	if p >= in.Config.Partitions {
		return nil, fmt.Errorf("%w %d: topic %q has partitions 0 to %d", ErrUnknownPartition, p, in.Name, in.Config.Partitions-1)
	}
	if p >= 0 {
		return []int32{p}, nil
	}
	out := make([]int32, in.Config.Partitions)
	for i := range out {
		out[i] = int32(i)
	}
	return out, nil
}

// partitionDir returns the directory of a partition.
func (d *dataDir) partitionDir(name string, p int32) string {
	return filepath.Join(d.path, topic.DirName(name, p))
}

// segmentBases lists the base offsets of the segments in a partition
// directory, ascending. Files of an unfinished replace (.swap, .cleaned),
// deletions in progress (.deleted) and truncation copies are not segments.
func segmentBases(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range entries {
		base, suffix, ok := segment.ParseFileName(e.Name())
		if ok && suffix == segment.LogSuffix && !e.IsDir() {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// strayEntries lists what in the data directory is neither a metadata file
// nor a partition directory of a topic the catalog names: leftovers of a
// crashed create or delete, which the next Broker removes, or foreign files.
func (d *dataDir) strayEntries() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, in := range d.topics {
		for p := int32(0); p < in.Config.Partitions; p++ {
			known[topic.DirName(in.Name, p)] = true
		}
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case known[n], strings.HasPrefix(n, "."), n == folio.FormatFile, n == folio.CheckpointFile,
			n == topic.CatalogFile, strings.HasSuffix(n, ".tmp"):
			continue
		}
		out = append(out, n)
	}
	return out, nil
}
