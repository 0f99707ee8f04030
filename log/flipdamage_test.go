package log

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/foliolog/folio/segment"
)

// TestActiveHeaderFlipCostsOneBatch: one flipped byte in the header of a
// batch of the active segment, a batch with valid batches after it in a
// segment whose offset index has no entry (small segments: the index gets
// its first entry only after IndexIntervalBytes), costs that batch and no
// other, after a clean and after an unclean shutdown: every other record
// reads back at its offset, the damage is reported naming the file, and
// the next append goes to the end the log had. The bytes: the base
// offset's high byte (outside the CRC; the batch claims offsets no segment
// holds), the length (the batch no longer frames: where the next batch
// starts is found without trusting it), and the magic. (Damage table
// seeds 1796420510312412485 unclean/active.log/flip, 102 and 101 with the
// flip forced onto header fields: the batches after the damaged one were
// lost.)
func TestActiveHeaderFlipCostsOneBatch(t *testing.T) {
	for _, clean := range []bool{true, false} {
		for _, c := range []struct {
			name      string
			at        int
			xor       byte
			cleanOnly bool
		}{
			{"base offset high byte", 0, 0x5a, false}, {"base offset byte 2", 2, 0x01, false},
			// Past the end the clean shutdown checkpointed.
			{"base offset low byte", 7, 0x40, true},
			{"length low byte", 11, 0x2b, false}, {"length byte 9", 9, 0x01, false}, {"magic", 16, 0x07, false},
		} {
			if c.cleanOnly && !clean {
				continue
			}
			for _, k := range []int{0, 3} {
				t.Run(fmt.Sprintf("clean %v/%s/batch %d", clean, c.name, k), func(t *testing.T) {
					dir := t.TempDir()
					o := &Options{SegmentBytes: 1 << 20, FlushPolicy: FlushNone, IndexIntervalBytes: 1 << 20}
					l := openT(t, nil, dir, o, State{})
					want := appendN(t, l, "b", 8, 2, 40)
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					st := l.Checkpoint()
					if !clean {
						st = State{} // no clean-shutdown checkpoint: the open scans the segment
					}
					path := segment.LogPath(dir, 0)
					pos, base, _ := batchesOf(t, path)
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					data[pos[k]+int64(c.at)] ^= c.xor
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					from, resume := base[k], base[k+1]
					var expect []rec
					for _, w := range want {
						if w.offset < from || w.offset >= resume {
							expect = append(expect, w)
						}
					}
					l = openT(t, nil, dir, o, st)
					defer l.Close()
					if l.LogEndOffset() != int64(len(want)) {
						t.Fatalf("log end %d, want %d; %+v", l.LogEndOffset(), len(want), l.Recovery())
					}
					got, damaged := readLocating(t, l, 0)
					if len(l.Recovery().Damage) > 0 {
						damageNaming(t, l.Recovery(), filepath.Base(path))
					} else if len(damaged) == 0 {
						t.Fatalf("the damage is reported neither by the open nor by the reads")
					}
					sameRecs(t, got, expect)
					if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != int64(len(want)) {
						t.Fatalf("append: %d %v, want offset %d", first, err, len(want))
					}
				})
			}
		}
	}
}
