package foliowatermill

import (
	"fmt"
	"sort"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/foliolog/folio"
)

// Marshaler converts Watermill messages into Folio records and back.
// Implementations must be safe for concurrent use.
type Marshaler interface {
	// Marshal returns the record for msg, to be appended to topic. The
	// record's Topic is set by the Publisher.
	Marshal(topic string, msg *message.Message) (*folio.Record, error)
	// Unmarshal returns the message of a consumed record. The record's
	// slices are the Unmarshaler's to keep.
	Unmarshal(rec *folio.Record) (*message.Message, error)
}

// UUIDHeader is the header that carries the message UUID when
// DefaultMarshaler.PartitionKey puts something else in the key.
const UUIDHeader = "_watermill_message_uuid"

// DefaultMarshaler maps a message onto a record as follows:
//
//   - the UUID onto the key (so that records of one message land in one
//     partition and a compacted topic keeps the last copy per UUID), or,
//     when PartitionKey is set, onto the header UUIDHeader, the key then
//     being what PartitionKey returns;
//   - each metadata entry onto a header of the same name and value, in
//     name order;
//   - the payload onto the value (a nil payload is a null value, which a
//     compacted topic treats as a tombstone).
//
// Unmarshal reverses it: the UUID is UUIDHeader's value when the record has
// that header and the key otherwise; every other header becomes a metadata
// entry (the last wins for a repeated name; a null value is "").
type DefaultMarshaler struct {
	// PartitionKey, if set, returns the record key for a message, for
	// example an entity id so that its messages share a partition and
	// keep their order. Default nil: the key is the UUID.
	PartitionKey func(topic string, msg *message.Message) ([]byte, error)
}

// Marshal implements Marshaler.
func (m DefaultMarshaler) Marshal(topic string, msg *message.Message) (*folio.Record, error) {
	if _, ok := msg.Metadata[UUIDHeader]; ok {
		return nil, fmt.Errorf("foliowatermill: message %s: metadata %q is reserved for the UUID", msg.UUID, UUIDHeader)
	}
	rec := &folio.Record{Topic: topic, Value: msg.Payload}
	names := make([]string, 0, len(msg.Metadata)+1)
	for k := range msg.Metadata {
		names = append(names, k)
	}
	sort.Strings(names)
	rec.Headers = make([]folio.Header, 0, len(names)+1)
	if m.PartitionKey != nil {
		key, err := m.PartitionKey(topic, msg)
		if err != nil {
			return nil, fmt.Errorf("foliowatermill: message %s: partition key: %w", msg.UUID, err)
		}
		rec.Key = key
		rec.Headers = append(rec.Headers, folio.Header{Key: UUIDHeader, Value: []byte(msg.UUID)})
	} else {
		rec.Key = []byte(msg.UUID)
	}
	for _, k := range names {
		rec.Headers = append(rec.Headers, folio.Header{Key: k, Value: []byte(msg.Metadata[k])})
	}
	return rec, nil
}

// Unmarshal implements Marshaler.
func (DefaultMarshaler) Unmarshal(rec *folio.Record) (*message.Message, error) {
	uuid := string(rec.Key)
	md := make(message.Metadata, len(rec.Headers))
	for _, h := range rec.Headers {
		if h.Key == UUIDHeader {
			uuid = string(h.Value)
			continue
		}
		md[h.Key] = string(h.Value)
	}
	msg := message.NewMessage(uuid, rec.Value)
	msg.Metadata = md
	return msg, nil
}
