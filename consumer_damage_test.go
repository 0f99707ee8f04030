package folio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
)

// damageBatch flips the last byte of the batch holding offset in the
// first segment of dir/<topic>-<partition>, so that its CRC fails while
// its header (and so every later batch's place) stays intact.
func damageBatch(t *testing.T, dir, topicName string, partition int, offset int64) {
	t.Helper()
	path := filepath.Join(dir, topicName+"-"+strconv.Itoa(partition), "00000000000000000000.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos+12 <= len(data); {
		base := int64(binary.BigEndian.Uint64(data[pos:]))
		size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
		last := base + int64(binary.BigEndian.Uint32(data[pos+23:]))
		if base <= offset && offset <= last {
			data[pos+size-1] ^= 0xff
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		pos += size
	}
	t.Fatalf("no batch holds offset %d in %s", offset, path)
}

// damagedDir returns a closed data directory with topic "t" of two
// partitions, ten records in each (one batch apiece), and the batch of
// offset 5 of partition 0 damaged.
func damagedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 2})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	for i := range 20 {
		if _, _, err := p.Produce(context.Background(), &Record{Topic: "t", Partition: int32(i % 2), Value: value("d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	damageBatch(t, dir, "t", 0, 5)
	return dir
}

// TestConsumerDeliversRecordsBeforeDamage: a consumer gets every valid
// record before a damaged batch, in the same Poll as those of its other
// partitions; the error comes at the next Poll, the position stays at the
// damaged batch, and the healthy partition goes on being read.
func TestConsumerDeliversRecordsBeforeDamage(t *testing.T) {
	for _, zc := range []bool{false, true} {
		t.Run(map[bool]string{false: "copies", true: "zero-copy"}[zc], func(t *testing.T) {
			b := openT(t, damagedDir(t), nil)
			c := consumerT(t, b, &ConsumerOptions{ZeroCopy: zc})
			if err := c.Assign(Assignment{Topic: "t", Partition: 0, Start: AtEarliest()}, Assignment{Topic: "t", Partition: 1, Start: AtEarliest()}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := map[int32][]int64{}
			var firstErr error
			for len(got[0]) < 5 || len(got[1]) < 10 {
				recs, err := c.Poll(ctx)
				if err != nil {
					if !IsCorrupt(err) {
						t.Fatalf("Poll after %v: %v", got, err)
					}
					if len(got[0]) < 5 {
						t.Fatalf("error %v before the records ahead of the damage (%v)", err, got[0])
					}
					firstErr = err
					continue
				}
				for _, r := range recs {
					if want := value("d", int(r.Offset)*2+int(r.Partition)); !bytes.Equal(r.Value, want) {
						t.Fatalf("partition %d offset %d: %q, want %q", r.Partition, r.Offset, r.Value, want)
					}
					got[r.Partition] = append(got[r.Partition], r.Offset)
				}
			}
			for i, off := range got[0] {
				if off != int64(i) || off >= 5 {
					t.Fatalf("partition 0 gave %v, want 0..4", got[0])
				}
			}
			if pos, _ := c.Position("t", 0); pos != 5 {
				t.Fatalf("position %d, want the damaged batch's 5", pos)
			}
			if firstErr == nil {
				// The two partitions fitted in one Poll: the error is the next.
				if _, err := c.Poll(ctx); !IsCorrupt(err) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Poll after the records: %v, want the damage", err)
				}
			}
			if pos, _ := c.Position("t", 0); pos != 5 {
				t.Fatalf("position %d after the error, want 5", pos)
			}
			// The healthy partition is still read past the damaged one.
			p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
			if _, _, err := p.Produce(ctx, &Record{Topic: "t", Partition: 1, Value: []byte("more")}); err != nil {
				t.Fatal(err)
			}
			for {
				recs, err := c.Poll(ctx)
				if err != nil {
					if !IsCorrupt(err) {
						t.Fatal(err)
					}
					continue
				}
				if len(recs) != 1 || recs[0].Partition != 1 || string(recs[0].Value) != "more" {
					t.Fatalf("Poll: %+v, want partition 1's new record", recs)
				}
				break
			}
			// A Seek past the damage goes on at the next batch.
			if err := c.Seek("t", 0, AtOffset(6)); err != nil {
				t.Fatal(err)
			}
			recs, err := c.Poll(ctx)
			if err != nil || len(recs) != 4 || recs[0].Offset != 6 {
				t.Fatalf("Poll after the Seek: %d records, %v; want 6..9", len(recs), err)
			}
		})
	}
}

// TestGroupMemberReadsPastDamagedPartition: a group member whose
// partitions include a damaged one gets the records of the others and the
// valid records of the damaged one, and what it commits stays at the
// damaged batch.
func TestGroupMemberReadsPastDamagedPartition(t *testing.T) {
	b := openT(t, damagedDir(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := b.JoinGroup(ctx, "g", []string{"t"}, &GroupOptions{Reset: group.ResetEarliest})
	if err != nil {
		t.Fatal(err)
	}
	n := map[int32]int{}
	corrupt := 0
	for (n[0] < 5 || n[1] < 10) && ctx.Err() == nil {
		recs, err := g.Poll(ctx)
		if err != nil {
			if !IsCorrupt(err) {
				t.Fatal(err)
			}
			corrupt++
			continue
		}
		for _, r := range recs {
			n[r.Partition]++
		}
	}
	if n[0] != 5 || n[1] != 10 {
		t.Fatalf("read %v, want 5 of partition 0 and 10 of partition 1", n)
	}
	if err := g.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	lags, err := b.GroupLag("g")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lags {
		if l.Partition == 0 && l.Committed != 5 {
			t.Fatalf("committed %d in partition 0, want 5 (the damaged batch)", l.Committed)
		}
	}
}
