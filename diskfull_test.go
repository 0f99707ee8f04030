package folio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

// TestDiskFull: when the disk fills, produce gets ErrDiskFull and nothing
// more, while consumers keep reading what was written and retention keeps
// deleting old segments; a reopen once there is space again recovers.
func TestDiskFull(t *testing.T) {
	for _, flush := range []FlushPolicy{FlushSync, FlushNone} {
		t.Run(flush.String(), func(t *testing.T) {
			fs := faultfs.New()
			dir := t.TempDir()
			b, err := Open(dir, faultOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			createTopicT(t, b, "t", TopicConfig{Flush: flush, SegmentBytes: 2048, RetentionBytes: 4096})
			p := producerT(t, b, nil)
			produceN(t, p, "t", "before", 200)

			var full atomic.Bool
			partDir := filepath.Join(dir, topic.DirName("t", 0))
			fs.SetHook(func(op faultfs.Op) error {
				if !full.Load() || !strings.HasPrefix(op.Path, partDir) {
					return nil
				}
				switch op.Kind {
				case faultfs.OpWrite, faultfs.OpAllocate, faultfs.OpCreate:
					return fmt.Errorf("disk full: %w", syscall.ENOSPC)
				}
				return nil
			})
			full.Store(true)
			for i := range 3 {
				_, _, err := p.Produce(context.Background(), &Record{Topic: "t", Value: []byte(fmt.Sprint("full", i))})
				if !errors.Is(err, ErrDiskFull) {
					t.Fatalf("produce %d on a full disk: %v, want ErrDiskFull", i, err)
				}
			}
			st := b.Stats()
			if !st.Partitions[0].Failed {
				t.Fatal("Stats does not report the partition failed")
			}
			hw := st.Partitions[0].HighWatermark
			if hw < 200 {
				t.Fatalf("high watermark %d below the 200 acknowledged records", hw)
			}

			// Reads go on.
			c := consumerT(t, b, &ConsumerOptions{Reset: ResetEarliest})
			_ = c.Assign(Assignment{Topic: "t"})
			recs := pollN(t, c, int(hw-st.Partitions[0].LogStartOffset))
			if got, want := string(recs[len(recs)-1].Value), string(value("before", 199)); hw == 200 && got != want {
				t.Fatalf("last record %q, want %q", got, want)
			}
			// Retention goes on: 200 records of ~80 bytes in 2 KiB segments,
			// 4 KiB kept.
			n, err := b.EnforceRetention()
			if n == 0 {
				t.Fatalf("retention on a full disk deleted no segment: %v", err)
			}
			if err != nil {
				// Segments rolled just before the disk filled were never
				// sealed; deleting them still tries to finish their index
				// (reported to the segment package). Only that may fail.
				if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, vfs.ErrNoSpace) {
					t.Fatalf("retention on a full disk: %v", err)
				}
				t.Logf("retention deleted %d segments and reported: %v", n, err)
			}
			ti, _ := b.DescribeTopic("t")
			if ti.Partitions[0].LogStartOffset == 0 {
				t.Fatal("log start offset did not move")
			}
			_ = c.Seek("t", 0, AtEarliest())
			if recs := pollN(t, c, int(hw-ti.Partitions[0].LogStartOffset)); recs[0].Offset != ti.Partitions[0].LogStartOffset {
				t.Fatalf("read from %d after retention, start is %d", recs[0].Offset, ti.Partitions[0].LogStartOffset)
			}

			// Space again: a reopen recovers and takes records.
			full.Store(false)
			kill(t, b, fs)
			b = openT(t, dir, faultOpts(fs))
			p = producerT(t, b, nil)
			if _, off, err := p.Produce(context.Background(), &Record{Topic: "t", Value: []byte("again")}); err != nil || off < hw {
				t.Fatalf("produce after reopen: offset %d, %v", off, err)
			}
		})
	}
}
