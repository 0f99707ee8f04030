package topic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"time"
)

// The catalog file, CatalogFile in the data directory:
//
//	magic "FCAT" | version u16 | reserved u16 (0) | payload length u32 |
//	payload (JSON, below) | crc u32: CRC-32C of every byte before it
//
// The JSON payload is readable with standard tools once the 12-byte header
// and the 4-byte trailer are cut off; the checksum makes a torn or
// bit-flipped file a corruption error instead of a silently smaller
// catalog. Every setting of a topic is stored, its defaults spelled out,
// so a later change of a default does not change existing topics.
const (
	// CatalogFile is the catalog's file name in the data directory.
	CatalogFile       = "topics.catalog"
	catalogTmp        = CatalogFile + ".tmp"
	catalogMagic      = "FCAT"
	catalogVersion    = 1
	catalogHeaderSize = 12
	catalogCRCSize    = 4
	// maxCatalogBytes bounds what Open reads: far above any real catalog
	// (100,000 topics at ~600 bytes), far below what a corrupt length could
	// make it allocate.
	maxCatalogBytes = 1 << 30
)

type catalogDoc struct {
	// NextProducerID is the producer-id high-water mark: every id below it
	// may have been handed out, so a reopened catalog starts there.
	NextProducerID int64      `json:"next_producer_id"`
	Topics         []topicDoc `json:"topics"`
}

type topicDoc struct {
	Name      string            `json:"name"`
	ID        string            `json:"id"`
	Internal  bool              `json:"internal,omitempty"`
	CreatedMs int64             `json:"created_ms"`
	Config    map[string]string `json:"config"`
}

// catalogState is the decoded catalog.
type catalogState struct {
	nextProducerID int64
	topics         map[string]Info
}

func encodeCatalog(st catalogState) ([]byte, error) {
	doc := catalogDoc{NextProducerID: st.nextProducerID, Topics: make([]topicDoc, 0, len(st.topics))}
	for _, in := range st.topics {
		cfg := make(map[string]string, len(Keys))
		for _, s := range in.Config.Settings() {
			cfg[s.Key] = s.Value
		}
		doc.Topics = append(doc.Topics, topicDoc{
			Name:      in.Name,
			ID:        in.ID.String(),
			Internal:  in.Internal,
			CreatedMs: in.Created.UnixMilli(),
			Config:    cfg,
		})
	}
	sort.Slice(doc.Topics, func(i, j int) bool { return doc.Topics[i].Name < doc.Topics[j].Name })
	payload, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("topic: encoding catalog: %w", err)
	}
	b := make([]byte, 0, catalogHeaderSize+len(payload)+catalogCRCSize)
	b = append(b, catalogMagic...)
	b = binary.BigEndian.AppendUint16(b, catalogVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// decodeCatalog parses and checks a catalog file: framing, checksum, and
// every field (names, ids, settings, no duplicate or colliding topics).
// Errors wrap ErrCorrupt, or ErrUnsupportedVersion for a newer format; the
// caller, which knows the file, names it (Catalog.decodeErr).
func decodeCatalog(data []byte) (catalogState, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if len(data) < catalogHeaderSize+catalogCRCSize {
		return catalogState{}, corrupt("%d bytes, shorter than an empty catalog", len(data))
	}
	if string(data[:4]) != catalogMagic {
		return catalogState{}, corrupt("bad magic %q", data[:4])
	}
	n := int64(binary.BigEndian.Uint32(data[8:]))
	if n != int64(len(data)-catalogHeaderSize-catalogCRCSize) {
		return catalogState{}, corrupt("payload length %d, file holds %d", n, len(data)-catalogHeaderSize-catalogCRCSize)
	}
	body := data[:len(data)-catalogCRCSize]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(data[len(body):]); got != want {
		return catalogState{}, corrupt("crc %08x, computed %08x", want, got)
	}
	if v := binary.BigEndian.Uint16(data[4:]); v != catalogVersion {
		return catalogState{}, fmt.Errorf("%w: %s version %d, this build reads %d", ErrUnsupportedVersion, CatalogFile, v, catalogVersion)
	}
	if r := binary.BigEndian.Uint16(data[6:]); r != 0 {
		return catalogState{}, corrupt("reserved field %d", r)
	}
	dec := json.NewDecoder(bytes.NewReader(body[catalogHeaderSize:]))
	dec.DisallowUnknownFields()
	var doc catalogDoc
	if err := dec.Decode(&doc); err != nil {
		return catalogState{}, corrupt("payload: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return catalogState{}, corrupt("data after the payload")
	}
	if doc.NextProducerID < 0 {
		return catalogState{}, corrupt("negative next_producer_id %d", doc.NextProducerID)
	}
	st := catalogState{nextProducerID: doc.NextProducerID, topics: make(map[string]Info, len(doc.Topics))}
	keys := make(map[string]string, len(doc.Topics))
	ids := make(map[ID]string, len(doc.Topics))
	for _, td := range doc.Topics {
		in, err := td.info()
		if err != nil {
			return catalogState{}, corrupt("topic %q: %v", td.Name, err)
		}
		if other, ok := keys[collisionKey(in.Name)]; ok {
			return catalogState{}, corrupt("topic %q collides with %q", in.Name, other)
		}
		if other, ok := ids[in.ID]; ok {
			return catalogState{}, corrupt("topics %q and %q share id %s", in.Name, other, in.ID)
		}
		keys[collisionKey(in.Name)], ids[in.ID] = in.Name, in.Name
		st.topics[in.Name] = in
	}
	return st, nil
}

func (td topicDoc) info() (Info, error) {
	validate := ValidateName
	if td.Internal {
		validate = ValidateInternalName
	}
	if err := validate(td.Name); err != nil {
		return Info{}, err
	}
	id, err := ParseID(td.ID)
	if err != nil {
		return Info{}, err
	}
	if _, ok := td.Config[KeyPartitions]; !ok {
		return Info{}, fmt.Errorf("no %s setting", KeyPartitions)
	}
	var cfg Config
	for _, k := range Keys { // a fixed order, so errors are deterministic
		v, ok := td.Config[k]
		if !ok {
			continue
		}
		if err := cfg.Set(k, v); err != nil {
			return Info{}, err
		}
	}
	for k := range td.Config {
		if !isKey(k) {
			return Info{}, fmt.Errorf("unknown setting %q", k)
		}
	}
	return Info{
		Name:     td.Name,
		ID:       id,
		Internal: td.Internal,
		Created:  time.UnixMilli(td.CreatedMs),
		Config:   cfg.WithDefaults(),
	}, nil
}

func isKey(k string) bool {
	for _, key := range Keys {
		if k == key {
			return true
		}
	}
	return false
}

// ID identifies one incarnation of a topic: a topic deleted and created
// again under the same name gets a new one. It is a random (version 4)
// UUID, like Kafka's topic ids.
type ID [16]byte

// String is the id as 32 lower-case hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ParseID parses the String form of an ID.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*len(id) {
		return ID{}, fmt.Errorf("topic id %q: want %d hex digits", s, 2*len(id))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID{}, fmt.Errorf("topic id %q: %w", s, err)
	}
	if id == (ID{}) {
		return ID{}, fmt.Errorf("topic id %q: zero", s)
	}
	if id.String() != s {
		return ID{}, fmt.Errorf("topic id %q: want lower-case hex", s)
	}
	return id, nil
}
