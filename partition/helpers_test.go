package partition

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testID is the topic id of the tests' partitions.
var testID = topic.ID{1, 2, 3}

// openT opens partition 0 of topic "t" with cfg in dir on fsys (nil:
// vfs.Default) and closes it at the end of the test.
func openT(t testing.TB, fsys vfs.FS, dir string, cfg topic.Config, st log.State, opts *Options) *Partition {
	t.Helper()
	if fsys == nil {
		fsys = vfs.Default
	}
	o := Options{RetentionCheckInterval: -1}
	if opts != nil {
		o = *opts
	}
	p, err := Open(fsys, filepath.Join(dir, "t-0"), topic.Info{Name: "t", ID: testID, Config: cfg}, 0, st, &o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// batchOf builds a batch of records with values v<i> (keys k<i>), from
// producer pid (-1: none) at sequence seq.
func batchOf(t testing.TB, codec record.Codec, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	bld, err := record.NewBuilder(&record.BuilderOptions{Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	if pid >= 0 {
		bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pid, epoch, seq
	}
	for i := range n {
		id := int(seq) + i
		if err := bld.Append(record.Record{Key: fmt.Appendf(nil, "k%d", id), Value: fmt.Appendf(nil, "p%d-e%d-v%d", pid, epoch, id),
			Timestamp: time.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	bt, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// stored returns copies of the batches p holds from the log start, up to
// bound.
func stored(t testing.TB, p *Partition, bound log.Bound) []record.Batch {
	t.Helper()
	var out []record.Batch
	for pos := p.LogStartOffset(); ; {
		v, err := p.Read(pos, 1<<20, bound)
		if errors.Is(err, log.ErrNoData) {
			return out
		}
		if err != nil {
			t.Fatalf("Read(%d, %v): %v", pos, bound, err)
		}
		err = readpath.Guard(func() error {
			buf, err := v.Bytes()
			if err != nil {
				return err
			}
			for len(buf) > 0 {
				bt, rest, err := record.Parse(buf)
				if err != nil {
					return err
				}
				buf = rest
				if bt.LastOffset() >= pos {
					out = append(out, bt.Clone())
					pos = bt.LastOffset() + 1
				}
			}
			return nil
		})
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// memSnapshots is a SnapshotStore in memory.
type memSnapshots struct {
	mu     sync.Mutex // guards data, writes
	data   []byte
	writes int
}

func (m *memSnapshots) ReadSnapshot() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil, fmt.Errorf("no snapshot: %w", os.ErrNotExist)
	}
	return append([]byte(nil), m.data...), nil
}

func (m *memSnapshots) WriteSnapshot(data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = append([]byte(nil), data...)
	m.writes++
	return nil
}

// logBuffer collects what a partition logs.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }
