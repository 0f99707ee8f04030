package transport

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxTestPartitions keeps fuzzed CreateTopics and CreatePartitions cheap.
const maxTestPartitions = 16

// testBackend is a Backend made of the lower packages alone (the tests of
// this package may not import the root): topics in memory, partitions
// opened with partition.Open in a temporary directory.
type testBackend struct {
	dir    string
	mu     sync.Mutex
	topics map[string]*testTopic
	nextID atomic.Int64
}

type testTopic struct {
	info  topic.Info
	parts []*partition.Partition
}

func newTestBackend(t testing.TB) *testBackend {
	b := &testBackend{dir: t.TempDir(), topics: map[string]*testTopic{}}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, tt := range b.topics {
			for _, p := range tt.parts {
				p.Close()
			}
		}
	})
	return b
}

func (b *testBackend) TopicInfos() ([]topic.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []topic.Info
	for _, tt := range b.topics {
		out = append(out, tt.info)
	}
	return out, nil
}

func (b *testBackend) TopicInfo(name string) (topic.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tt, ok := b.topics[name]
	if !ok {
		return topic.Info{}, fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	return tt.info, nil
}

func (b *testBackend) TopicInfoByID(id topic.ID) (topic.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, tt := range b.topics {
		if tt.info.ID == id {
			return tt.info, nil
		}
	}
	return topic.Info{}, fmt.Errorf("%w: id %s", topic.ErrNotFound, id)
}

func (b *testBackend) CreateTopicInfo(name string, cfg topic.Config) (topic.Info, error) {
	if err := topic.ValidateName(name); err != nil {
		return topic.Info{}, err
	}
	if err := partition.ValidateConfig(cfg); err != nil {
		return topic.Info{}, err
	}
	if cfg.Partitions > maxTestPartitions {
		return topic.Info{}, fmt.Errorf("%w: testBackend takes at most %d", topic.ErrInvalidPartitions, maxTestPartitions)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[name]; ok {
		return topic.Info{}, fmt.Errorf("%w: %q", topic.ErrExists, name)
	}
	in := topic.Info{Name: name, Created: time.Now(), Config: cfg.WithDefaults()}
	rand.Read(in.ID[:])
	tt := &testTopic{info: in}
	for p := range in.Config.Partitions {
		part, err := partition.Open(nil, filepath.Join(b.dir, fmt.Sprintf("%s-%d", name, p)), in, p, log.State{}, &partition.Options{RetentionCheckInterval: -1})
		if err != nil {
			return topic.Info{}, err
		}
		tt.parts = append(tt.parts, part)
	}
	b.topics[name] = tt
	return in, nil
}

func (b *testBackend) AlterTopicInfo(name string, validateOnly bool, change func(*topic.Config) error) (topic.Info, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tt, ok := b.topics[name]
	if !ok {
		return topic.Info{}, fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	cfg := tt.info.Config
	if err := change(&cfg); err != nil {
		return topic.Info{}, err
	}
	for _, p := range tt.parts {
		if _, err := p.CheckReconfigure(cfg); err != nil {
			return topic.Info{}, err
		}
	}
	in := tt.info
	in.Config = cfg.WithDefaults()
	if validateOnly {
		return in, nil
	}
	for _, p := range tt.parts {
		if err := p.Reconfigure(cfg); err != nil {
			return topic.Info{}, err
		}
	}
	tt.info = in
	return in, nil
}

func (b *testBackend) DeleteTopic(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tt, ok := b.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	for _, p := range tt.parts {
		p.CloseDeleted()
	}
	delete(b.topics, name)
	return nil
}

func (b *testBackend) SetPartitionCount(name string, total int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tt, ok := b.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	if total <= int32(len(tt.parts)) || total > maxTestPartitions {
		return fmt.Errorf("%w: %d", topic.ErrInvalidPartitions, total)
	}
	for p := int32(len(tt.parts)); p < total; p++ {
		part, err := partition.Open(nil, filepath.Join(b.dir, fmt.Sprintf("%s-%d", name, p)), tt.info, p, log.State{}, &partition.Options{RetentionCheckInterval: -1})
		if err != nil {
			return err
		}
		tt.parts = append(tt.parts, part)
	}
	tt.info.Config.Partitions = total
	return nil
}

func (b *testBackend) Partition(name string, p int32) (*partition.Partition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tt, ok := b.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	if p < 0 || int(p) >= len(tt.parts) {
		return nil, fmt.Errorf("%w: %s-%d", topic.ErrPartitionOutOfRange, name, p)
	}
	return tt.parts[p], nil
}

func (b *testBackend) DeleteRecordsBefore(name string, p int32, offset int64) error {
	part, err := b.Partition(name, p)
	if err != nil {
		return err
	}
	return part.DeleteRecordsBefore(offset)
}

func (b *testBackend) AllocateProducerID() (int64, error) { return b.nextID.Add(1) - 1, nil }

func (b *testBackend) GroupCoordinator() (*group.Coordinator, error) {
	return nil, errors.New("testBackend: no group coordinator")
}

// testServer is a server on a loopback listener.
type testServer struct {
	*Server
	b    *testBackend
	addr string
	done chan error
}

func startServer(t testing.TB, b *testBackend, opts *Options) *testServer {
	t.Helper()
	if b == nil {
		b = newTestBackend(t)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	s, err := NewServer(b, &o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, b: b, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

// testLogger logs to the test log when -v, else discards (a malformed
// frame's warning is expected in several tests).
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (b *testBackend) mustCreate(t testing.TB, name string, cfg topic.Config) topic.Info {
	t.Helper()
	in, err := b.CreateTopicInfo(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
