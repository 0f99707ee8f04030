package log

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0 = pick one and print it)")

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// The crash test's child: run only the helper, no leak check (it
		// is killed).
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed for a randomized test and logs it so a failure
// can be replayed with -seed.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

// payload is the value of record i of a test: its bytes identify it, so a
// record read back is checked for content, not just count.
func payload(tag string, i int64, size int) []byte {
	head := fmt.Sprintf("%s-%d:", tag, i)
	b := make([]byte, max(size, len(head)))
	copy(b, head)
	for j := len(head); j < len(b); j++ {
		b[j] = byte('a' + (int(i)+j)%26)
	}
	return b
}

// makeBatch builds a batch of n records whose values are payload(tag, ids...).
func makeBatch(t testing.TB, tag string, firstID int64, n, valueSize int, ts int64) record.Batch {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		id := firstID + int64(i)
		if err := bld.Append(record.Record{Key: []byte(fmt.Sprintf("k%d", id)), Value: payload(tag, id, valueSize), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rec is a record read back from a log.
type rec struct {
	offset int64
	key    string
	value  string
	ts     int64
}

// readAll reads every visible record from offset from to the high watermark.
func readAll(t testing.TB, l *Log, from int64) []rec {
	t.Helper()
	var out []rec
	off := from
	for off < l.HighWatermark() {
		v, err := l.Read(off, 1<<20)
		if errors.Is(err, ErrNoData) {
			break
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		next, recs, err := decodeView(v, off)
		v.Release()
		if err != nil {
			t.Fatalf("decode at %d: %v", off, err)
		}
		out = append(out, recs...)
		if next <= off {
			t.Fatalf("read at %d made no progress", off)
		}
		off = next
	}
	return out
}

// decodeView decodes the records of a view at or after from and returns the
// offset after the view's last batch.
func decodeView(v *readpath.View, from int64) (next int64, out []rec, err error) {
	err = readpath.Guard(func() error {
		buf, err := v.Bytes()
		if err != nil {
			return err
		}
		buf = bytes.Clone(buf)
		for len(buf) > 0 {
			b, rest, err := record.Parse(buf)
			if err != nil {
				return err
			}
			it := b.Records(nil)
			for it.Next() {
				r := it.Record()
				if r.Offset() >= from {
					out = append(out, rec{offset: r.Offset(), key: string(r.Key()), value: string(r.Value()), ts: r.Timestamp()})
				}
			}
			err = it.Err()
			it.Close()
			if err != nil {
				return err
			}
			next = b.LastOffset() + 1
			buf = rest
		}
		return nil
	})
	return next, out, err
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

const childEnv = "FOLIO_LOG_CRASH_CHILD"

// kill drops a log after a simulated power cut, the way the dead process
// would: it stops the background goroutine (if any) and touches no file or
// mapping of the old log again (a power cut may have shortened files that
// are still mapped).
func (l *Log) kill() {
	l.appendMu.Lock()
	already := l.closing
	l.closing = true
	l.appendMu.Unlock()
	if !already {
		close(l.quit)
		l.wg.Wait()
	}
	l.closed.Store(true)
}
