package folio

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/vfs"
	"github.com/foliolog/folio/vfs/faultfs"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0 = pick one and print it)")

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A crash or lock test's child: run only the helper, no leak
		// check (it is killed).
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed of a randomized test and logs it, so a failure
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

// openT opens a Broker on dir and closes it at the end of the test (a test
// that closes it itself gets ErrClosed there, which is ignored).
// failures keeps the last error ProduceAsync callbacks report; callback
// may run on any of the producer's goroutines.
type failures struct {
	mu  sync.Mutex // guards err
	err error
}

func (f *failures) callback(_ *Record, err error) {
	if err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
	}
}

func (f *failures) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func openT(t testing.TB, dir string, opts *Options) *Broker {
	t.Helper()
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// faultOpts returns Options over fs with the periodic goroutines off, so a
// test decides when checkpoints and retention run.
func faultOpts(fs vfs.FS) *Options {
	return &Options{FS: fs, CheckpointInterval: -1, RetentionCheckInterval: -1}
}

func createTopicT(t testing.TB, b *Broker, name string, cfg TopicConfig) TopicInfo {
	t.Helper()
	ti, err := b.CreateTopic(name, cfg)
	if err != nil {
		t.Fatalf("CreateTopic(%q): %v", name, err)
	}
	return ti
}

func producerT(t testing.TB, b *Broker, opts *ProducerOptions) *Producer {
	t.Helper()
	p, err := b.NewProducer(opts)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func consumerT(t testing.TB, b *Broker, opts *ConsumerOptions) *Consumer {
	t.Helper()
	c, err := b.NewConsumer(opts)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// value is the value of record i of a test; its bytes identify it, so a
// record read back is checked for content, not just count.
func value(tag string, i int) []byte {
	return []byte(fmt.Sprintf("%s-%06d", tag, i))
}

// produceN produces n records with keys k<i> and values value(tag, i)
// synchronously and returns their (partition, offset) by i.
func produceN(t testing.TB, p *Producer, topicName, tag string, n int) [][2]int64 {
	t.Helper()
	out := make([][2]int64, n)
	for i := range n {
		part, off, err := p.Produce(context.Background(), &Record{Topic: topicName, Key: []byte(fmt.Sprintf("k%d", i)), Value: value(tag, i)})
		if err != nil {
			t.Fatalf("Produce %d: %v", i, err)
		}
		out[i] = [2]int64{int64(part), off}
	}
	return out
}

// pollN polls until it has n records or the deadline passes.
func pollN(t testing.TB, c *Consumer, n int) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []Record
	for len(out) < n {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	if len(out) != n {
		t.Fatalf("polled %d records, want %d", len(out), n)
	}
	return out
}

// kill abandons b the way a crash of the process would: fs.Crash (if fs
// is not nil) kills every open handle so nothing more reaches the disk,
// then the Broker's goroutines and logs stop without a checkpoint or
// marker, and the lock is released for the next Open.
func kill(t testing.TB, b *Broker, fs *faultfs.FS) {
	t.Helper()
	if fs != nil {
		fs.Crash()
	}
	b.closed.Store(true)
	b.clientsMu.Lock()
	var ps []*Producer
	for p := range b.producers {
		ps = append(ps, p)
	}
	var cs []*Consumer
	for c := range b.consumers {
		cs = append(cs, c)
	}
	b.clientsMu.Unlock()
	for _, p := range ps {
		_ = p.Close()
	}
	for _, c := range cs {
		_ = c.Close()
	}
	close(b.quit)
	b.wg.Wait()
	for _, p := range b.allPartitions() {
		_ = p.Close() // fails on the dead handles: nothing is written
	}
	if b.cleaner != nil {
		_ = b.cleaner.Close() // its workers are goroutines of this process
	}
	_ = b.catalog.Close()
	if b.lock != nil {
		_ = b.lock.unlock()
	}
}

// partLog returns the log of a partition, for tests that look at what it
// holds or drive it below the Broker.
func partLog(b *Broker, topicName string, partition int32) (*log.Log, error) {
	p, err := b.Partition(topicName, partition)
	if err != nil {
		return nil, err
	}
	return p.Log(), nil
}
