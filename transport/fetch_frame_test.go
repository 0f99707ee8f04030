package transport

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bytesSet is a recordSet over a byte slice.
type bytesSet []byte

func (b bytesSet) Len() int                           { return len(b) }
func (b bytesSet) WriteTo(w io.Writer) (int64, error) { n, err := w.Write(b); return int64(n), err }
func (bytesSet) Release()                             {}

// randomFetch builds a random fetch response's topics from seed.
func randomFetch(seed uint64) (int16, []fetchTopic) {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	version := int16(4 + r.IntN(13)) // 4..16
	topics := make([]fetchTopic, r.IntN(4))
	for i := range topics {
		t := &topics[i]
		name := make([]byte, r.IntN(20))
		for j := range name {
			name[j] = byte('a' + r.IntN(26))
		}
		t.name = string(name)
		for j := range t.id {
			t.id[j] = byte(r.Uint32())
		}
		t.parts = make([]fetchPart, r.IntN(5))
		for j := range t.parts {
			p := &t.parts[j]
			p.partition = r.Int32()
			p.errCode = int16(r.IntN(100))
			p.hw, p.lso, p.start = r.Int64(), r.Int64(), r.Int64()
			p.aborted = r.IntN(2) == 0
			switch r.IntN(3) {
			case 0:
			case 1:
				p.records = bytesSet{}
			default:
				rec := make([]byte, r.IntN(300))
				for k := range rec {
					rec[k] = byte(r.Uint32())
				}
				p.records = bytesSet(rec)
			}
			if r.IntN(3) == 0 {
				p.diverging = &divergingEpoch{epoch: r.Int32(), end: r.Int64()}
			}
		}
	}
	return version, topics
}

// checkFetchFrame encodes topics and decodes them with kmsg.
func checkFetchFrame(t *testing.T, version int16, corr int32, errCode int16, topics []fetchTopic) {
	t.Helper()
	var buf bytes.Buffer
	f := buildFetchFrame(version, corr, errCode, 0, topics)
	if err := writeFrameTo(&buf, f); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if got := int64(binary.BigEndian.Uint32(b)); got != int64(len(b)-4) || got != f.size {
		t.Fatalf("v%d: frame length %d (size %d), frame holds %d", version, got, f.size, len(b)-4)
	}
	if got := int32(binary.BigEndian.Uint32(b[4:])); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := b[8:]
	if version >= 12 {
		var err error
		if body, err = skipTags(body); err != nil {
			t.Fatal(err)
		}
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("v%d: kmsg cannot decode the frame: %v", version, err)
	}
	if version >= 7 && resp.ErrorCode != errCode {
		t.Fatalf("error code %d, want %d", resp.ErrorCode, errCode)
	}
	if len(resp.Topics) != len(topics) {
		t.Fatalf("v%d: %d topics, want %d", version, len(resp.Topics), len(topics))
	}
	for i, rt := range resp.Topics {
		want := topics[i]
		if version >= 13 && rt.TopicID != want.id || version < 13 && rt.Topic != want.name {
			t.Fatalf("v%d: topic %d is %q/%x, want %q/%x", version, i, rt.Topic, rt.TopicID, want.name, want.id)
		}
		if len(rt.Partitions) != len(want.parts) {
			t.Fatalf("topic %d: %d partitions, want %d", i, len(rt.Partitions), len(want.parts))
		}
		for j, rp := range rt.Partitions {
			wp := want.parts[j]
			if rp.Partition != wp.partition || rp.ErrorCode != wp.errCode || rp.HighWatermark != wp.hw || rp.LastStableOffset != wp.lso {
				t.Fatalf("v%d partition %d/%d: got %+v, want %+v", version, i, j, rp, wp)
			}
			if version >= 5 && rp.LogStartOffset != wp.start {
				t.Fatalf("log start %d, want %d", rp.LogStartOffset, wp.start)
			}
			if (rp.AbortedTransactions != nil) != wp.aborted || len(rp.AbortedTransactions) != 0 {
				t.Fatalf("aborted transactions %v, want empty=%v", rp.AbortedTransactions, wp.aborted)
			}
			if version >= 11 && rp.PreferredReadReplica != -1 {
				t.Fatalf("preferred read replica %d", rp.PreferredReadReplica)
			}
			wantDiv := divergingEpoch{epoch: -1, end: -1} // kmsg's defaults: none
			if wp.diverging != nil && version >= 12 {
				wantDiv = *wp.diverging
			}
			if got := (divergingEpoch{rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset}); got != wantDiv {
				t.Fatalf("v%d: diverging epoch %+v, want %+v", version, got, wantDiv)
			}
			var wantRec []byte
			if wp.records != nil {
				wantRec = []byte(wp.records.(bytesSet))
			}
			if !bytes.Equal(rp.RecordBatches, wantRec) {
				t.Fatalf("v%d: records differ: %d bytes, want %d", version, len(rp.RecordBatches), len(wantRec))
			}
		}
	}
}

func TestFetchFrameMatchesKmsg(t *testing.T) {
	for seed := range uint64(500) {
		v, topics := randomFetch(seed)
		checkFetchFrame(t, v, int32(seed), int16(seed%3), topics)
	}
}

// FuzzFetchFrame checks the hand-written Fetch framing against kmsg's
// decoder for random responses of every version served.
func FuzzFetchFrame(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s, int32(7))
	}
	f.Fuzz(func(t *testing.T, seed uint64, corr int32) {
		v, topics := randomFetch(seed)
		checkFetchFrame(t, v, corr, 0, topics)
	})
}
