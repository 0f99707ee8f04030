package group

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The records of __consumer_offsets are Kafka's, byte for byte, so a Kafka
// tool can read the topic: an offset commit is a record whose key is
// OffsetCommitKey (version 1: group, topic, partition) and whose value is
// OffsetCommitValue (version 3: offset, leader epoch, metadata, commit
// timestamp); a null value is a tombstone that deletes the offset. A
// group's membership is a record whose key is GroupMetadataKey (version 2:
// group) and whose value is GroupMetadataValue (version 3: protocol type,
// generation, protocol, leader, state timestamp, members); the distinct
// key version keeps the two kinds from ever sharing a key under
// compaction. Since KIP-848 Kafka stores other record kinds (key versions
// 3 and up) in the topic; the loader skips them.

const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	// maxOffsetValueVersion is the newest OffsetCommitValue version the
	// loader understands (v4 is Kafka 4.1's flexible one).
	maxOffsetValueVersion = 4

	groupKeyVersion   = 2
	groupValueVersion = 3
	// maxGroupValueVersion is the newest GroupMetadataValue version the
	// loader understands (v4 is the flexible one).
	maxGroupValueVersion = 4
)

// offsetRecord is one decoded record of the offsets topic.
type offsetRecord struct {
	group string
	tp    TopicPartition
	// tombstone deletes the offset; the fields below are then unset.
	tombstone   bool
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // Unix milliseconds
}

// recordKind says what a record of the offsets topic holds.
type recordKind uint8

const (
	kindOffsetCommit recordKind = iota
	// kindGroupMetadata is a group's membership; decodeGroupRecord decodes it.
	kindGroupMetadata
	// kindOther is a record this coordinator does not use (KIP-848 records).
	kindOther
)

// appendOffsetKey appends the key of a commit of tp by group.
func appendOffsetKey(dst []byte, group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(dst)
}

// appendOffsetValue appends the value of a commit.
func appendOffsetValue(dst []byte, offset int64, leaderEpoch int32, metadata string, commitTime int64) []byte {
	v := kmsg.OffsetCommitValue{
		Version:         offsetValueVersion,
		Offset:          offset,
		LeaderEpoch:     leaderEpoch,
		Metadata:        metadata,
		CommitTimestamp: commitTime,
	}
	return v.AppendTo(dst)
}

// decodeOffsetRecord decodes a record of the offsets topic. It never
// panics; bytes that are not a valid record give an error wrapping
// ErrCorrupt.
func decodeOffsetRecord(key, value []byte, valueNull bool) (offsetRecord, recordKind, error) {
	if len(key) < 2 {
		return offsetRecord{}, 0, fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
	case groupKeyVersion:
		return offsetRecord{}, kindGroupMetadata, nil
	default:
		if v < 0 {
			return offsetRecord{}, 0, fmt.Errorf("%w: key version %d", ErrCorrupt, v)
		}
		return offsetRecord{}, kindOther, nil
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return offsetRecord{}, 0, fmt.Errorf("%w: offset commit key: %w", ErrCorrupt, err)
	}
	if k.Partition < 0 {
		return offsetRecord{}, 0, fmt.Errorf("%w: offset commit key for partition %d", ErrCorrupt, k.Partition)
	}
	r := offsetRecord{group: k.Group, tp: TopicPartition{k.Topic, k.Partition}}
	if valueNull {
		r.tombstone = true
		return r, kindOffsetCommit, nil
	}
	if len(value) < 2 {
		return offsetRecord{}, 0, fmt.Errorf("%w: offset commit value of %d bytes", ErrCorrupt, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxOffsetValueVersion {
		return offsetRecord{}, 0, fmt.Errorf("%w: offset commit value version %d", ErrCorrupt, v)
	}
	var val kmsg.OffsetCommitValue
	if err := val.ReadFrom(value); err != nil {
		return offsetRecord{}, 0, fmt.Errorf("%w: offset commit value: %w", ErrCorrupt, err)
	}
	r.offset, r.metadata, r.commitTime = val.Offset, val.Metadata, val.CommitTimestamp
	r.leaderEpoch = -1
	if val.Version >= 3 {
		r.leaderEpoch = val.LeaderEpoch
	}
	if r.offset < 0 {
		return offsetRecord{}, 0, fmt.Errorf("%w: committed offset %d", ErrCorrupt, r.offset)
	}
	return r, kindOffsetCommit, nil
}

// groupRecord is one decoded group metadata record.
type groupRecord struct {
	group string
	// tombstone: the group was deleted; value is then unset.
	tombstone bool
	value     kmsg.GroupMetadataValue
}

// appendGroupKey appends the key of a group's metadata record.
func appendGroupKey(dst []byte, group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(dst)
}

// decodeGroupRecord decodes a record whose key decodeOffsetRecord found to
// be of kindGroupMetadata. It never panics; bytes that are not a valid
// record give an error wrapping ErrCorrupt.
func decodeGroupRecord(key, value []byte, valueNull bool) (groupRecord, error) {
	var k kmsg.GroupMetadataKey
	if len(key) < 2 || int16(binary.BigEndian.Uint16(key)) != groupKeyVersion {
		return groupRecord{}, fmt.Errorf("%w: not a group metadata key", ErrCorrupt)
	}
	if err := k.ReadFrom(key); err != nil {
		return groupRecord{}, fmt.Errorf("%w: group metadata key: %w", ErrCorrupt, err)
	}
	r := groupRecord{group: k.Group}
	if valueNull {
		r.tombstone = true
		return r, nil
	}
	if len(value) < 2 {
		return groupRecord{}, fmt.Errorf("%w: group metadata value of %d bytes", ErrCorrupt, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxGroupValueVersion {
		return groupRecord{}, fmt.Errorf("%w: group metadata value version %d", ErrCorrupt, v)
	}
	if err := r.value.ReadFrom(value); err != nil {
		return groupRecord{}, fmt.Errorf("%w: group metadata value: %w", ErrCorrupt, err)
	}
	if r.value.Generation < 0 {
		return groupRecord{}, fmt.Errorf("%w: group metadata generation %d", ErrCorrupt, r.value.Generation)
	}
	return r, nil
}

// PartitionFor returns the partition of __consumer_offsets that holds a
// group's commits: Kafka's Utils.abs(groupId.hashCode()) % partitions,
// with Java's String.hashCode over the UTF-16 code units of the group id,
// so a group maps to the partition a Kafka cluster would use. partitions
// must be positive.
func PartitionFor(group string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := javaStringHash(group)
	// Kafka's Utils.abs maps math.MinInt32 to 0 rather than overflowing.
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over UTF-16 code units, in wrapping 32-bit arithmetic. Invalid UTF-8 is
// taken as U+FFFD, as Java's decoder does.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}
