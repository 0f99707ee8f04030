package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// The read commands (consume without a group, dump, verify, topics list and
// describe) must work beside a live Broker without its lock, so they never
// go through folio.Open or topic.OpenCatalog: both repair what they find
// (a catalog open removes partition directories it does not know yet, a log
// open may cut or rebuild files), which is right for the owner of the
// directory and wrong for a bystander. Instead this file reads the few
// metadata files itself, opening every file O_RDONLY. The frames mirror
// folio's metafile.go and topic's catalog_format.go (both unexported);
// /work/prompts/requests-from-cli.md asks for exported read-only decoders so
// that this copy can go.

// Frames of the metadata files, as the folio and topic packages write them:
//
//	magic [4]byte | version u16 | reserved u16 | payload length u32 |
//	payload | CRC-32C of every byte before it (u32)
const (
	metaHeaderSize  = 12
	metaTrailerSize = 4
	maxMetaBytes    = 1 << 30 // bounds what a damaged length makes us read

	formatMagic     = "FOLI"
	checkpointMagic = "FCHK"
	cleanMagic      = "FCLN"
	catalogMagic    = "FCAT"

	catalogVersion    = 1
	checkpointVersion = 1
	cleanVersion      = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dataDir is a read-only view of a data directory, as it was when read.
type dataDir struct {
	path   string
	topics []topic.Info // by name
	// starts holds the log start offsets of the checkpoint file, which the
	// owner writes periodically: a start moved since (DeleteRecords) is
	// not in it yet, and the first segment's base bounds the start anyway.
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
	if err := checkFormatFile(path); err != nil {
		return nil, err
	}
	d := &dataDir{path: path}
	var err error
	if d.topics, err = readCatalog(path); err != nil {
		return nil, err
	}
	if d.starts, err = readCheckpoint(path, d.topics); err != nil {
		return nil, err
	}
	return d, nil
}

// checkFormatFile makes sure path is a Folio data directory of the format
// this build reads.
func checkFormatFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist", ErrNoDataDir, path)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrNoDataDir, path)
	}
	data, err := readMeta(path, folio.FormatFile)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s has no %s", ErrNoDataDir, path, folio.FormatFile)
	}
	if err != nil {
		return err
	}
	v, _, err := decodeMeta(filepath.Join(path, folio.FormatFile), formatMagic, data)
	if err != nil {
		return err
	}
	if v != folio.FormatVersion {
		return fmt.Errorf("%w: %s: format version %d, this folio knows %d", folio.ErrUnknownFormat, path, v, folio.FormatVersion)
	}
	return nil
}

// readMeta reads a metadata file whole, refusing sizes no real one has.
func readMeta(dir, name string) ([]byte, error) {
	p := filepath.Join(dir, name)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxMetaBytes {
		return nil, &corruptError{Path: p, Pos: 0, Offset: -1, Err: fmt.Errorf("%d bytes, more than a metadata file holds", fi.Size())}
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return data, nil
}

// decodeMeta checks a metadata frame and returns its version and payload
// (aliasing data). Damage is a *corruptError naming path.
func decodeMeta(path, magic string, data []byte) (uint16, []byte, error) {
	bad := func(pos int64, format string, args ...any) error {
		return &corruptError{Path: path, Pos: pos, Offset: -1, Err: fmt.Errorf(format, args...)}
	}
	if len(data) < metaHeaderSize+metaTrailerSize {
		return 0, nil, bad(0, "%d bytes, shorter than a header", len(data))
	}
	if string(data[:4]) != magic {
		return 0, nil, bad(0, "magic %q, want %q", data[:4], magic)
	}
	n := binary.BigEndian.Uint32(data[8:12])
	if uint64(n) != uint64(len(data)-metaHeaderSize-metaTrailerSize) {
		return 0, nil, bad(8, "payload length %d, the file holds %d", n, len(data)-metaHeaderSize-metaTrailerSize)
	}
	end := metaHeaderSize + int(n)
	want := binary.BigEndian.Uint32(data[end:])
	if got := crc32.Checksum(data[:end], castagnoli); got != want {
		return 0, nil, bad(int64(end), "checksum %08x, computed %08x", want, got)
	}
	if r := binary.BigEndian.Uint16(data[6:8]); r != 0 {
		return 0, nil, bad(6, "reserved field %d", r)
	}
	return binary.BigEndian.Uint16(data[4:6]), data[metaHeaderSize:end], nil
}

// catalogDoc is the JSON payload of the topic catalog.
type catalogDoc struct {
	NextProducerID int64 `json:"next_producer_id"`
	Topics         []struct {
		Name      string            `json:"name"`
		ID        string            `json:"id"`
		Internal  bool              `json:"internal,omitempty"`
		CreatedMs int64             `json:"created_ms"`
		Config    map[string]string `json:"config"`
	} `json:"topics"`
}

// readCatalog reads the topic catalog. A directory without one (a Broker
// between writing the format file and the catalog) has no topics.
func readCatalog(dir string) ([]topic.Info, error) {
	data, err := readMeta(dir, topic.CatalogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeCatalog(filepath.Join(dir, topic.CatalogFile), data)
}

// decodeCatalog parses a catalog file; every problem is a *corruptError.
func decodeCatalog(path string, data []byte) ([]topic.Info, error) {
	v, payload, err := decodeMeta(path, catalogMagic, data)
	if err != nil {
		return nil, err
	}
	if v != catalogVersion {
		return nil, fmt.Errorf("%w: %s: catalog version %d, this folio knows %d", folio.ErrUnknownFormat, path, v, catalogVersion)
	}
	bad := func(format string, args ...any) error {
		return &corruptError{Path: path, Pos: metaHeaderSize, Offset: -1, Err: fmt.Errorf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var doc catalogDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, bad("payload: %v", err)
	}
	var infos []topic.Info
	seen := map[string]bool{}
	for _, td := range doc.Topics {
		validate := topic.ValidateName
		if td.Internal {
			validate = topic.ValidateInternalName
		}
		if err := validate(td.Name); err != nil {
			return nil, bad("topic %q: %v", td.Name, err)
		}
		if seen[td.Name] {
			return nil, bad("topic %q listed twice", td.Name)
		}
		seen[td.Name] = true
		id, err := topic.ParseID(td.ID)
		if err != nil {
			return nil, bad("topic %q: %v", td.Name, err)
		}
		if _, ok := td.Config[topic.KeyPartitions]; !ok {
			return nil, bad("topic %q: no %s setting", td.Name, topic.KeyPartitions)
		}
		var cfg topic.Config
		for _, k := range topic.Keys { // a fixed order, so errors are deterministic
			val, ok := td.Config[k]
			if !ok {
				continue
			}
			if err := cfg.Set(k, val); err != nil {
				return nil, bad("topic %q: %v", td.Name, err)
			}
		}
		if len(td.Config) != countKnown(td.Config) {
			return nil, bad("topic %q: unknown setting in %v", td.Name, td.Config)
		}
		infos = append(infos, topic.Info{
			Name: td.Name, ID: id, Internal: td.Internal,
			Created: time.UnixMilli(td.CreatedMs), Config: cfg.WithDefaults(),
		})
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, nil
}

// countKnown counts the settings of cfg whose keys are topic.Keys.
func countKnown(cfg map[string]string) int {
	n := 0
	for _, k := range topic.Keys {
		if _, ok := cfg[k]; ok {
			n++
		}
	}
	return n
}

// readCheckpoint returns the log start offsets of the checkpoint file, for
// the partitions of topics (entries of deleted topics are dropped). The
// file is written every minute by a live Broker; until its first write
// there is none.
func readCheckpoint(dir string, topics []topic.Info) (map[partKey]int64, error) {
	out := map[partKey]int64{}
	data, err := readMeta(dir, folio.CheckpointFile)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := decodeCheckpoint(filepath.Join(dir, folio.CheckpointFile), data)
	if err != nil {
		return nil, err
	}
	live := map[topic.ID]bool{}
	for _, in := range topics {
		live[in.ID] = true
	}
	for k, start := range entries {
		if live[k.id] {
			out[k] = start
		}
	}
	return out, nil
}

// decodeCheckpoint parses the checkpoint payload: count u32, then per entry
// id [16]byte | partition i32 | recoveryPoint i64 | logStartOffset i64 |
// name length u16 | name.
func decodeCheckpoint(path string, data []byte) (map[partKey]int64, error) {
	v, p, err := decodeMeta(path, checkpointMagic, data)
	if err != nil {
		return nil, err
	}
	if v != checkpointVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this folio knows %d", folio.ErrUnknownFormat, path, v, checkpointVersion)
	}
	bad := func(format string, args ...any) error {
		return &corruptError{Path: path, Pos: metaHeaderSize, Offset: -1, Err: fmt.Errorf(format, args...)}
	}
	if len(p) < 4 {
		return nil, bad("payload of %d bytes has no entry count", len(p))
	}
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	const fixed = 16 + 4 + 8 + 8 + 2
	if uint64(n)*fixed > uint64(len(p)) {
		return nil, bad("%d entries cannot fit in %d bytes", n, len(p))
	}
	out := make(map[partKey]int64, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < fixed {
			return nil, bad("entry %d truncated", i)
		}
		var k partKey
		copy(k.id[:], p[:16])
		k.partition = int32(binary.BigEndian.Uint32(p[16:]))
		start := int64(binary.BigEndian.Uint64(p[28:]))
		nl := int(binary.BigEndian.Uint16(p[36:]))
		p = p[fixed:]
		if len(p) < nl {
			return nil, bad("entry %d: name of %d bytes truncated", i, nl)
		}
		p = p[nl:]
		if k.partition < 0 || start < 0 {
			return nil, bad("entry %d: negative field", i)
		}
		out[k] = start
	}
	if len(p) != 0 {
		return nil, bad("%d bytes after the last entry", len(p))
	}
	return out, nil
}

// checkCleanMarker checks the clean-shutdown marker's frame, if there is one.
func checkCleanMarker(dir string) error {
	data, err := readMeta(dir, folio.CleanShutdownFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	path := filepath.Join(dir, folio.CleanShutdownFile)
	v, p, err := decodeMeta(path, cleanMagic, data)
	if err != nil {
		return err
	}
	if v != cleanVersion || len(p) != 8 {
		return &corruptError{Path: path, Pos: metaHeaderSize, Offset: -1, Err: fmt.Errorf("version %d with %d payload bytes", v, len(p))}
	}
	return nil
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
	return topic.Info{}, fmt.Errorf("%w %q in %s", ErrUnknownTopic, name, d.path)
}

// checkTopicName refuses names no topic can have, so that a typo gets the
// rule it broke rather than "unknown topic".
func checkTopicName(name string) error {
	if topic.IsInternal(name) {
		return topic.ValidateInternalName(name)
	}
	return topic.ValidateName(name)
}

// partitions returns the partitions a command names: all of the topic's
// when p is negative.
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
