package folio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
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
				if _, firstErr = c.Poll(ctx); !IsCorrupt(firstErr) || !errors.Is(firstErr, ErrCorrupt) {
					t.Fatalf("Poll after the records: %v, want the damage", firstErr)
				}
			}
			if pos, _ := c.Position("t", 0); pos != 5 {
				t.Fatalf("position %d after the error, want 5", pos)
			}
			// The error names the file, the bytes and exactly the
			// damaged batch's offsets (issue 11 item 5).
			var dr *log.DamagedRangeError
			path := filepath.Join(b.Dir(), "t-0", "00000000000000000000.log")
			if !errors.As(firstErr, &dr) || dr.From != 5 || dr.Resume != 6 || dr.Path != path || dr.Pos <= 0 || dr.End <= dr.Pos {
				t.Fatalf("the damage reported as %v (%+v), want offset 5 of %s", firstErr, dr, path)
			}
			// Reported once, the next Poll passes over it: the valid
			// records after it come, and the damage is not reported again.
			assertPolls(t, ctx, c, 0, []int64{6, 7, 8, 9})
			// The healthy partition is still read.
			p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
			if _, _, err := p.Produce(ctx, &Record{Topic: "t", Partition: 1, Value: []byte("more")}); err != nil {
				t.Fatal(err)
			}
			recs, err := c.Poll(ctx)
			if err != nil || len(recs) != 1 || recs[0].Partition != 1 || string(recs[0].Value) != "more" {
				t.Fatalf("Poll: %+v, %v; want partition 1's new record", recs, err)
			}
			// A Seek back to the damaged batch meets and reports it anew,
			// with the position held there, and then passes over it.
			if err := c.Seek("t", 0, AtOffset(5)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Poll(ctx); !errors.As(err, &dr) || dr.From != 5 {
				t.Fatalf("Poll after the Seek back: %v, want the damage again", err)
			}
			if pos, _ := c.Position("t", 0); pos != 5 {
				t.Fatalf("position %d after the second report, want 5", pos)
			}
			assertPolls(t, ctx, c, 0, []int64{6, 7, 8, 9})
		})
	}
}

// assertPolls polls c until it has the offsets want of partition part of
// topic "t", failing on any error or other record.
func assertPolls(t *testing.T, ctx context.Context, c *Consumer, part int32, want []int64) {
	t.Helper()
	var got []int64
	for len(got) < len(want) {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %v: %v, want offsets %v", got, err, want)
		}
		for _, r := range recs {
			if r.Partition != part {
				t.Fatalf("partition %d offset %d, want partition %d's %v", r.Partition, r.Offset, part, want)
			}
			got = append(got, r.Offset)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}

// TestGroupMemberReadsPastDamagedPartition: a group member whose
// partitions include a damaged one gets the records of the others and the
// valid records of the damaged one; what it commits stays at the damaged
// batch until the damage was reported, and only then moves past it, with
// the records after it read.
func TestGroupMemberReadsPastDamagedPartition(t *testing.T) {
	b := openT(t, damagedDir(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := b.JoinGroup(ctx, "g", []string{"t"}, &GroupOptions{Reset: group.ResetEarliest})
	if err != nil {
		t.Fatal(err)
	}
	committed := func() int64 {
		t.Helper()
		if err := g.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		lags, err := b.GroupLag("g")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lags {
			if l.Partition == 0 {
				return l.Committed
			}
		}
		t.Fatal("no lag for partition 0")
		return 0
	}
	n := map[int32]int{}
	reported := false
	for (n[0] < 9 || n[1] < 10) && ctx.Err() == nil {
		recs, err := g.Poll(ctx)
		if err != nil {
			if !IsCorrupt(err) || reported {
				t.Fatalf("Poll: %v (reported before: %v)", err, reported)
			}
			reported = true
			if c := committed(); c != 5 {
				t.Fatalf("committed %d in partition 0 when the damage was reported, want 5 (the damaged batch)", c)
			}
			continue
		}
		for _, r := range recs {
			if r.Partition == 0 && r.Offset > 5 && !reported {
				t.Fatalf("offset %d of partition 0 read before the damage was reported", r.Offset)
			}
			n[r.Partition]++
		}
		if !reported && n[0] == 5 {
			if c := committed(); c != 5 {
				t.Fatalf("committed %d in partition 0 before the damage was reported, want 5", c)
			}
		}
	}
	if n[0] != 9 || n[1] != 10 || !reported {
		t.Fatalf("read %v (damage reported: %v), want 9 of partition 0 and 10 of partition 1", n, reported)
	}
	if c := committed(); c != 10 {
		t.Fatalf("committed %d in partition 0 after reading past the damage, want 10", c)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
