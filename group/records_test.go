package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func TestPartitionForIsKafkas(t *testing.T) {
	for _, c := range []struct {
		group string
		hash  int32 // Java's String.hashCode
		want  int32 // of 50 partitions
	}{
		{"hello", 99162322, 22},
		{"Hello World", -862545276, 26},
		// Its hashCode is Integer.MIN_VALUE, which Kafka's Utils.abs maps
		// to 0 rather than overflowing.
		{"polygenelubricants", -2147483648, 0},
		{"", 0, 0},
		// A character outside the BMP is two UTF-16 code units.
		{"\U0001F600", 0xD83D*31 + 0xDE00, 49},
	} {
		if h := javaStringHash(c.group); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.group, h, c.hash)
		}
		if p := PartitionFor(c.group, 50); p != c.want {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.group, p, c.want)
		}
	}
	if p := PartitionFor("x", 0); p != 0 {
		t.Errorf("PartitionFor with no partitions = %d", p)
	}
}

func TestOffsetRecordBytes(t *testing.T) {
	key := appendOffsetKey(nil, "g", TopicPartition{"t", 3})
	// version 1 | "g" | "t" | partition 3
	if want := "0001" + "00016700017400000003"; hex.EncodeToString(key) != want {
		t.Fatalf("key %x, want %s", key, want)
	}
	val := appendOffsetValue(nil, 258, -1, "m", 0x0102030405)
	// version 3 | offset | leader epoch -1 | "m" | commit timestamp
	want := "0003" + "0000000000000102" + "ffffffff" + "00016d" + "0000000102030405"
	if hex.EncodeToString(val) != want {
		t.Fatalf("value %x, want %s", val, want)
	}
	r, kind, err := decodeOffsetRecord(key, val, false)
	if err != nil || kind != kindOffsetCommit || r.group != "g" || r.tp != (TopicPartition{"t", 3}) ||
		r.offset != 258 || r.leaderEpoch != -1 || r.metadata != "m" || r.commitTime != 0x0102030405 || r.tombstone {
		t.Fatalf("decoded %+v %v %v", r, kind, err)
	}
}

func TestDecodeOffsetRecordVersions(t *testing.T) {
	key := appendOffsetKey(nil, "grp", TopicPartition{"topic", 7})
	key0 := bytes.Clone(key)
	key0[1] = 0 // key version 0 has the same layout
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name   string
		key    []byte
		value  []byte
		null   bool
		kind   recordKind
		offset int64
		epoch  int32
		meta   string
		err    bool
	}{
		{name: "v0 value", key: key0, value: mustHex("0000" + "000000000000000a" + "0002686d" + "0000000000000001"), offset: 10, epoch: -1, meta: "hm"},
		{name: "v1 value with expiry", key: key, value: mustHex("0001" + "000000000000000b" + "0000" + "0000000000000001" + "0000000000000002"), offset: 11, epoch: -1},
		{name: "v2 value", key: key, value: mustHex("0002" + "000000000000000c" + "0000" + "0000000000000001"), offset: 12, epoch: -1},
		{name: "v3 value", key: key, value: appendOffsetValue(nil, 13, 5, "x", 9), offset: 13, epoch: 5, meta: "x"},
		{name: "v4 flexible value", key: key, value: mustHex("0004" + "000000000000000e" + "00000006" + "02" + "61" + "0000000000000001" + "00"), offset: 14, epoch: 6, meta: "a"},
		{name: "tombstone", key: key, null: true},
		{name: "group metadata key", key: mustHex("0002" + "0001" + "67"), value: []byte{0, 3}, kind: kindGroupMetadata},
		{name: "KIP-848 record", key: mustHex("0003" + "0001" + "67"), kind: kindOther},
		{name: "short key", key: []byte{0}, err: true},
		{name: "negative key version", key: mustHex("ffff0001"), err: true},
		{name: "truncated key", key: key[:len(key)-2], value: appendOffsetValue(nil, 1, 1, "", 1), err: true},
		{name: "truncated value", key: key, value: appendOffsetValue(nil, 1, 1, "", 1)[:10], err: true},
		{name: "unknown value version", key: key, value: mustHex("0009" + "000000000000000e"), err: true},
		{name: "negative offset", key: key, value: appendOffsetValue(nil, -5, 1, "", 1), err: true},
		{name: "negative partition", key: appendOffsetKey(nil, "g", TopicPartition{"t", -1}), value: appendOffsetValue(nil, 1, 1, "", 1), err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, kind, err := decodeOffsetRecord(c.key, c.value, c.null)
			if c.err {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("got %+v, %v; want ErrCorrupt", r, err)
				}
				return
			}
			if err != nil || kind != c.kind {
				t.Fatalf("kind %v err %v", kind, err)
			}
			if kind != kindOffsetCommit {
				return
			}
			if r.group != "grp" || r.tp != (TopicPartition{"topic", 7}) || r.tombstone != c.null {
				t.Fatalf("decoded %+v", r)
			}
			if !c.null && (r.offset != c.offset || r.leaderEpoch != c.epoch || r.metadata != c.meta) {
				t.Fatalf("decoded %+v, want offset %d epoch %d metadata %q", r, c.offset, c.epoch, c.meta)
			}
		})
	}
}

// FuzzDecodeOffsetRecord: decoding arbitrary bytes never panics, and a
// decoded commit re-encodes to bytes that decode to the same commit.
func FuzzDecodeOffsetRecord(f *testing.F) {
	key := appendOffsetKey(nil, "g", TopicPartition{"t", 1})
	f.Add(key, appendOffsetValue(nil, 5, 2, "meta", 77), false)
	f.Add(key, []byte(nil), true)
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{0, 3}, false)
	f.Add(key[:5], []byte{0, 4, 0, 0}, false)
	f.Add([]byte{0, 1, 0xff, 0xff}, []byte{0, 1}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, null bool) {
		r, kind, err := decodeOffsetRecord(key, value, null)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error outside ErrCorrupt: %v", err)
			}
			return
		}
		if kind != kindOffsetCommit {
			return
		}
		k := appendOffsetKey(nil, r.group, r.tp)
		var v []byte
		if !r.tombstone {
			v = appendOffsetValue(nil, r.offset, r.leaderEpoch, r.metadata, r.commitTime)
		}
		r2, kind2, err := decodeOffsetRecord(k, v, r.tombstone)
		if err != nil || kind2 != kindOffsetCommit || r2 != r {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r, r2, err)
		}
	})
}
