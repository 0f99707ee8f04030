package folio

import (
	"sync"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestPowerCutHighWatermarkCheckpoint cuts the power at every file
// operation of a checkpoint: the checkpoint read afterwards is the old one
// or the new one, whole, with the partition's high watermark as of that
// checkpoint, never damaged or lost.
func TestPowerCutHighWatermarkCheckpoint(t *testing.T) {
	for cutAt := 1; ; cutAt++ {
		fs := faultfs.New()
		dir := t.TempDir()
		b, err := Open(dir, faultOpts(fs))
		if err != nil {
			t.Fatal(err)
		}
		createTopicT(t, b, "hw", TopicConfig{Partitions: 1})
		p := producerT(t, b, nil)
		produceN(t, p, "hw", "a", 5)
		if err := b.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		produceN(t, p, "hw", "b", 4)
		var (
			mu  sync.Mutex
			ops int
			cut bool
		)
		fs.SetHook(func(faultfs.Op) error {
			mu.Lock()
			defer mu.Unlock()
			if !cut {
				if ops++; ops == cutAt {
					cut = true
					if err := fs.PowerCut(); err != nil {
						t.Errorf("power cut: %v", err)
					}
				}
			}
			return nil
		})
		_ = b.Checkpoint()
		mu.Lock()
		inside := cut
		if !cut {
			cut = true
			if err := fs.PowerCut(); err != nil {
				t.Fatal(err)
			}
		}
		mu.Unlock()
		fs.SetHook(nil)
		kill(t, b, nil)
		entries, err := ReadCheckpoint(dir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("cut at op %d: checkpoint %+v, %v", cutAt, entries, err)
		}
		if hw := entries[0].HighWatermark; (hw != 5 || entries[0].RecoveryPoint != 5) && (hw != 9 || entries[0].RecoveryPoint != 9) {
			t.Fatalf("cut at op %d: checkpoint %+v, want the one at 5 or the one at 9", cutAt, entries[0])
		}
		if !inside {
			t.Logf("cut at each of the checkpoint's %d file operations", cutAt-1)
			if cutAt < 3 {
				t.Fatalf("the checkpoint made only %d file operations", cutAt-1)
			}
			return
		}
	}
}
