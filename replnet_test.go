package folio

// Two brokers in one process, each a partition and a Kafka endpoint on
// loopback, replicating through replica.Leader (the leader side the
// endpoint reports follower fetches to) and replica.Follower (the fetch
// loop): the data path of issue 15 over the real wire, without the Broker
// facade (the root wires it separately).

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/replica"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rnBroker is one replica of one partition with a Kafka endpoint: a
// transport.Backend and ReplicaBackend over that partition alone.
type rnBroker struct {
	id   int32
	dir  string
	info topic.Info
	hook *replica.Hook
	p    *partition.Partition
	srv  *transport.Server
	addr string
	done chan error
}

const rnTopic = "rep"

var rnTP = replica.TopicPartition{Topic: rnTopic, Partition: 0}

func rnInfo(cfg topic.Config) topic.Info {
	cfg.Partitions = 1
	in := topic.Info{Name: rnTopic, Created: time.Unix(1700000000, 0), Config: cfg.WithDefaults()}
	copy(in.ID[:], "replnet-topic-id")
	return in
}

func startRNBroker(t testing.TB, id int32, cfg topic.Config) *rnBroker {
	t.Helper()
	b := &rnBroker{id: id, dir: filepath.Join(t.TempDir(), fmt.Sprintf("broker%d", id)), info: rnInfo(cfg), hook: replica.NewHook(rnTP), done: make(chan error, 1)}
	var err error
	b.p, err = partition.Open(nil, filepath.Join(b.dir, rnTopic+"-0"), b.info, 0, log.State{},
		&partition.Options{Replication: b.hook, RetentionCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if b.srv, err = transport.NewServer(b, &transport.Options{NodeID: id}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = l.Addr().String()
	go func() { b.done <- b.srv.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.srv.Shutdown(ctx); err != nil {
			t.Errorf("broker %d: Shutdown: %v", id, err)
		}
		<-b.done
		b.p.Close()
	})
	return b
}

func (b *rnBroker) TopicInfos() ([]topic.Info, error) { return []topic.Info{b.info}, nil }
func (b *rnBroker) TopicInfo(name string) (topic.Info, error) {
	if name != rnTopic {
		return topic.Info{}, fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	return b.info, nil
}
func (b *rnBroker) TopicInfoByID(id topic.ID) (topic.Info, error) {
	if id != b.info.ID {
		return topic.Info{}, fmt.Errorf("%w: %s", topic.ErrNotFound, id)
	}
	return b.info, nil
}
func (b *rnBroker) CreateTopicInfo(string, topic.Config) (topic.Info, error) {
	return topic.Info{}, errors.New("rnBroker: fixed topics")
}
func (b *rnBroker) AlterTopicInfo(string, bool, func(*topic.Config) error) (topic.Info, error) {
	return topic.Info{}, errors.New("rnBroker: fixed topics")
}
func (b *rnBroker) DeleteTopic(string) error { return errors.New("rnBroker: fixed topics") }
func (b *rnBroker) SetPartitionCount(string, int32) error {
	return errors.New("rnBroker: fixed topics")
}
func (b *rnBroker) AllocateProducerID() (int64, error) { return int64(b.id) << 32, nil }
func (b *rnBroker) GroupCoordinator() (*group.Coordinator, error) {
	return nil, errors.New("rnBroker: no groups")
}
func (b *rnBroker) Partition(name string, p int32) (*partition.Partition, error) {
	if name != rnTopic || p != 0 {
		return nil, fmt.Errorf("%w: %s-%d", topic.ErrNotFound, name, p)
	}
	return b.p, nil
}
func (b *rnBroker) DeleteRecordsBefore(name string, p int32, offset int64) error {
	part, err := b.Partition(name, p)
	if err != nil {
		return err
	}
	return part.DeleteRecordsBefore(offset)
}

// PartitionLeader implements transport.ReplicaBackend.
func (b *rnBroker) PartitionLeader(name string, p int32) (transport.PartitionLeader, error) {
	if _, err := b.Partition(name, p); err != nil {
		return nil, err
	}
	if ld := b.hook.Leader(); ld != nil {
		return ld, nil
	}
	return nil, fmt.Errorf("%w: %s-%d: broker %d follows", replica.ErrNotLeader, name, p, b.id)
}

var _ transport.ReplicaBackend = (*rnBroker)(nil)

// lead makes b the leader of rnTP in the metadata's current epoch.
func (b *rnBroker) lead(t testing.TB, meta replica.Metadata, minISR int) *replica.Leader {
	t.Helper()
	ld, err := replica.NewLeader(context.Background(), meta, rnTP, b.id, b.p, &replica.LeaderOptions{MinInsyncReplicas: minISR})
	if err != nil {
		t.Fatal(err)
	}
	b.hook.SetLeader(ld)
	return ld
}

// follower starts b's follower side against the brokers of cluster.
func (b *rnBroker) follower(t testing.TB, meta replica.Metadata, cluster ...*rnBroker) *replica.Follower {
	t.Helper()
	f, err := replica.NewFollower(&replica.FollowerOptions{
		ID: b.id, Incarnation: 1, Metadata: meta, MaxWait: 200 * time.Millisecond, Backoff: 20 * time.Millisecond,
		Logger: rnLogger(),
		Addr: func(id int32) (string, error) {
			for _, c := range cluster {
				if c.id == id {
					return c.addr, nil
				}
			}
			return "", fmt.Errorf("no broker %d", id)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Follow(rnTP, b.p); err != nil {
		t.Fatal(err)
	}
	return f
}

// rnMeta returns an in-memory metadata with replicas registered (each
// in incarnation 1) and rnTP created on them, the first leading in epoch
// 0.
func rnMeta(t testing.TB, replicas ...int32) *replica.Mem {
	t.Helper()
	meta := replica.NewMem()
	for _, id := range replicas {
		meta.Register(id, 1)
	}
	if _, err := meta.Create(rnTP, replicas...); err != nil {
		t.Fatal(err)
	}
	return meta
}

// rnLogger logs to stderr under -v.
func rnLogger() *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// rnBatch builds a batch of n records of size bytes, tagged.
func rnBatch(t testing.TB, tag string, n, size int) []byte {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		v := bytes.Repeat([]byte{'x'}, size)
		copy(v, fmt.Sprintf("%s-%d", tag, i))
		if err := bld.Append(record.Record{Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	bt, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// rnWaitEnd waits until p's log end reaches end.
func rnWaitEnd(t testing.TB, p *partition.Partition, end int64) {
	t.Helper()
	ch := make(chan struct{})
	cancel := p.WaitEndFunc(end-1, func() { close(ch) })
	defer cancel()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("log end %d, want %d", p.LogEndOffset(), end)
	}
}

// rnWaitHW waits until p's high watermark reaches hw.
func rnWaitHW(t testing.TB, p *partition.Partition, hw int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Wait(ctx, hw-1); err != nil {
		t.Fatalf("high watermark %d, want %d: %v", p.HighWatermark(), hw, err)
	}
}

// rnSameSegments fails unless both brokers' partition directories hold the
// same segment files (.log) byte for byte.
func rnSameSegments(t testing.TB, a, b *rnBroker) {
	t.Helper()
	read := func(br *rnBroker) map[string][]byte {
		dir := filepath.Join(br.dir, rnTopic+"-0")
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				out[e.Name()] = data
			}
		}
		return out
	}
	sa, sb := read(a), read(b)
	na, nb := keys(sa), keys(sb)
	if !slices.Equal(na, nb) {
		t.Fatalf("segments of broker %d %v, of broker %d %v", a.id, na, b.id, nb)
	}
	for _, n := range na {
		if !bytes.Equal(sa[n], sb[n]) {
			t.Fatalf("segment %s differs: %d bytes on broker %d, %d on broker %d", n, len(sa[n]), a.id, len(sb[n]), b.id)
		}
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestReplicationFollowerCatchesUp: broker 1 leads, broker 2 follows over
// the Kafka endpoint. Records appended with acks=1 stay uncommitted (high
// watermark 0) until the follower has fetched them; the follower catches
// up, its high watermark follows the leader's, an acks=all append is
// acknowledged through the follower's fetches, and the two partitions'
// segment files (several, the topic rolls small segments) end byte-identical.
func TestReplicationFollowerCatchesUp(t *testing.T) {
	cfg := topic.Config{Flush: log.FlushNone, SegmentBytes: 64 << 10}
	meta := rnMeta(t, 1, 2)
	b1, b2 := startRNBroker(t, 1, cfg), startRNBroker(t, 2, cfg)
	ld := b1.lead(t, meta, 2)
	const n = 200
	ctx := replica.WithAcks(context.Background(), replica.AckLeader)
	for i := range n {
		if _, err := b1.p.AppendBatch(ctx, rnBatch(t, fmt.Sprint(i), 3, 300)); err != nil {
			t.Fatal(err)
		}
	}
	end := b1.p.LogEndOffset()
	if hw := b1.p.HighWatermark(); hw != 0 {
		t.Fatalf("leader's high watermark %d before any follower fetched, want 0", hw)
	}
	f := b2.follower(t, meta, b1, b2)
	defer f.Close()
	rnWaitEnd(t, b2.p, end)
	rnWaitHW(t, b1.p, end)
	rnWaitHW(t, b2.p, end)
	if hw, ok := ld.HighWatermark(); !ok || hw != end {
		t.Fatalf("leader's high watermark %d (%v), want %d", hw, ok, end)
	}
	// acks=all: acknowledged once the follower's next fetch passed it.
	actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b1.p.AppendBatch(actx, rnBatch(t, "all", 2, 100))
	if err != nil {
		t.Fatal(err)
	}
	if hw := b1.p.HighWatermark(); hw <= res.LastOffset {
		t.Fatalf("acks=all returned with the high watermark at %d, below its last offset %d", hw, res.LastOffset)
	}
	rnWaitEnd(t, b2.p, b1.p.LogEndOffset())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rnSameSegments(t, b1, b2)
	if segs := b1.p.Log().Stats().Segments; segs < 3 {
		t.Fatalf("%d segments: the test means to cross rolls", segs)
	}
}

// TestReplicationTruncatesDivergentTail: broker 2 leads epoch 0 and broker
// 1 copies its first records; then broker 2 appends a tail nobody copies,
// and broker 1 is elected in epoch 1 and appends its own. Following broker
// 1, broker 2 reconciles by epoch lineage (OffsetForLeaderEpoch: epoch 0
// ends at the common prefix), truncates its tail, and copies the leader's
// records: the logs end byte-identical. A fetch in the stale epoch 0 is
// FENCED_LEADER_EPOCH, one by the new follower's own stale metadata
// NOT_LEADER_OR_FOLLOWER on the old leader.
func TestReplicationTruncatesDivergentTail(t *testing.T) {
	cfg := topic.Config{Flush: log.FlushNone}
	meta := rnMeta(t, 2, 1)
	b1, b2 := startRNBroker(t, 1, cfg), startRNBroker(t, 2, cfg)
	ld2 := b2.lead(t, meta, 1)
	ack1 := replica.WithAcks(context.Background(), replica.AckLeader)
	for i := range 3 {
		if _, err := b2.p.AppendBatch(ack1, rnBatch(t, fmt.Sprint("common", i), 2, 50)); err != nil {
			t.Fatal(err)
		}
	}
	common := b2.p.LogEndOffset()
	f1 := b1.follower(t, meta, b1, b2)
	rnWaitEnd(t, b1.p, common)
	f1.Close()
	for i := range 2 {
		if _, err := b2.p.AppendBatch(ack1, rnBatch(t, fmt.Sprint("lost", i), 2, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if b2.p.LogEndOffset() <= common {
		t.Fatal("no divergent tail")
	}

	// Broker 1 is elected; broker 2 steps down.
	if _, _, err := meta.Elect(rnTP, 1); err != nil {
		t.Fatal(err)
	}
	if err := ld2.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2.hook.SetLeader(nil)
	b1.lead(t, meta, 1)
	for i := range 4 {
		if _, err := b1.p.AppendBatch(ack1, rnBatch(t, fmt.Sprint("new", i), 2, 50)); err != nil {
			t.Fatal(err)
		}
	}
	end := b1.p.LogEndOffset()

	// A fetch in epoch 0 is fenced; broker 2 no longer leads.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b1.addr, b2.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, c := range []struct {
		b     *rnBroker
		epoch int32
		want  *kerr.Error
	}{{b1, 0, kerr.FencedLeaderEpoch}, {b1, 2, kerr.UnknownLeaderEpoch}, {b2, 1, kerr.NotLeaderForPartition}} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2, 1
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = rnTopic, b1.info.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 0, c.epoch, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		seeds := cl.SeedBrokers()
		br := seeds[0]
		if c.b == b2 {
			br = seeds[1]
		}
		resp, err := br.Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; got != c.want.Code {
			t.Fatalf("fetch from broker %d in epoch %d: code %d, want %s", c.b.id, c.epoch, got, c.want.Message)
		}
	}

	f2 := b2.follower(t, meta, b1, b2)
	defer f2.Close()
	rnWaitEnd(t, b2.p, end)
	rnWaitHW(t, b1.p, end)
	if err := f2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b2.p.Log().LeaderEpochs(); len(got) != 2 || got[1] != (log.EpochEntry{Epoch: 1, StartOffset: common}) {
		t.Fatalf("follower's epochs %+v, want epoch 1 from %d", got, common)
	}
	rnSameSegments(t, b1, b2)
}

var rnBenchMiB = flag.Int("replnet-mib", 64, "MiB the leader holds in BenchmarkReplicationCatchUp")

// BenchmarkReplicationCatchUp: a fresh follower catching up with a leader
// holding -replnet-mib MiB of 1 KiB records over loopback (fetch, append
// to its own log under FlushNone), beside the same run's plain consumer
// fetch of the same bytes from the same endpoint (a kmsg fetch loop with
// the follower's fetch sizes, discarding the records) and the follower's
// local half alone (append-only: the same batches appended from memory). Bytes/s is the
// leader's log size over the time to copy it.
func BenchmarkReplicationCatchUp(b *testing.B) {
	cfg := topic.Config{Flush: log.FlushNone}
	meta := rnMeta(b, 1, 2)
	leader := startRNBroker(b, 1, cfg)
	leader.lead(b, meta, 1)
	ack1 := replica.WithAcks(context.Background(), replica.AckLeader)
	batch := rnBatch(b, "bench", 64, 1024)
	for leader.p.Log().Stats().Bytes < int64(*rnBenchMiB)<<20 {
		if _, err := leader.p.AppendBatch(ack1, batch); err != nil {
			b.Fatal(err)
		}
	}
	end, size := leader.p.LogEndOffset(), leader.p.Log().Stats().Bytes
	// A first follower establishes the high watermark at the end (the
	// consumer reads below it) and warms the leader's page cache.
	warm := startRNBroker(b, 2, cfg)
	f := warm.follower(b, meta, leader)
	rnWaitEnd(b, warm.p, end)
	rnWaitHW(b, leader.p, end)
	f.Close()

	inc := int64(1)
	b.Run("follower", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			b.StopTimer()
			inc++
			meta.Register(2, inc)
			fb := startRNBroker(b, 2, cfg)
			b.StartTimer()
			f, err := replica.NewFollower(&replica.FollowerOptions{
				ID: 2, Incarnation: inc, Metadata: meta,
				Addr: func(int32) (string, error) { return leader.addr, nil },
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Follow(rnTP, fb.p); err != nil {
				b.Fatal(err)
			}
			rnWaitEnd(b, fb.p, end)
			b.StopTimer()
			f.Close()
			b.StartTimer()
		}
	})
	// The follower's local half alone: the leader's batches, read in
	// memory first, appended to a fresh partition in 8 MiB calls, as the
	// follower appends each fetch response (CRC checks and writes).
	b.Run("append-only", func(b *testing.B) {
		var chunks [][]record.Batch
		for offset := int64(0); offset < end; {
			v, err := leader.p.Read(offset, 8<<20, log.BoundLogEnd)
			if err != nil {
				b.Fatal(err)
			}
			data, err := v.Bytes()
			if err != nil {
				b.Fatal(err)
			}
			data = slices.Clone(data)
			v.Release()
			var chunk []record.Batch
			for rest := data; len(rest) > 0; {
				bt, r, err := record.Parse(rest)
				if err != nil {
					b.Fatal(err)
				}
				chunk, rest, offset = append(chunk, bt), r, bt.LastOffset()+1
			}
			chunks = append(chunks, chunk)
		}
		b.SetBytes(size)
		for b.Loop() {
			b.StopTimer()
			fb := startRNBroker(b, 2, cfg)
			b.StartTimer()
			for _, c := range chunks {
				if _, _, err := fb.p.AppendFollower(c...); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("consumer", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr), kgo.FetchMaxBytes(16<<20), kgo.BrokerMaxReadBytes(32<<20))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		br := cl.SeedBrokers()[0]
		b.SetBytes(size)
		for b.Loop() {
			for offset := int64(0); offset < end; {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 16<<20, 500
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = rnTopic, leader.info.ID
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.FetchOffset, rp.PartitionMaxBytes = offset, 8<<20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp, err := br.Request(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				recs := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
				var last int64 = -1
				for rest := recs; len(rest) > 0; {
					bt, r, err := record.Parse(rest)
					if err != nil {
						break
					}
					rest, last = r, bt.LastOffset()
				}
				if last < offset {
					b.Fatalf("no progress at %d", offset)
				}
				offset = last + 1
			}
		}
	})
}

// TestReplicationFollowsLeaderChange: three brokers, broker 1 leading with
// min.insync.replicas 2 and acks=all appends. Broker 2 is elected; the old
// leader, fenced, answers broker 3's fetches NOT_LEADER_OR_FOLLOWER, and
// broker 3's fetch loop re-reads the metadata and moves to broker 2 without
// being restarted; broker 1 follows too. acks=all appends on the new
// leader are acknowledged through both, and all three logs end
// byte-identical.
func TestReplicationFollowsLeaderChange(t *testing.T) {
	cfg := topic.Config{Flush: log.FlushNone}
	meta := rnMeta(t, 1, 2, 3)
	b1, b2, b3 := startRNBroker(t, 1, cfg), startRNBroker(t, 2, cfg), startRNBroker(t, 3, cfg)
	ld1 := b1.lead(t, meta, 2)
	f2 := b2.follower(t, meta, b1, b2, b3)
	defer f2.Close()
	f3 := b3.follower(t, meta, b1, b2, b3)
	defer f3.Close()
	appendAll := func(b *rnBroker, tag string, n int) {
		t.Helper()
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := b.p.AppendBatch(ctx, rnBatch(t, fmt.Sprint(tag, i), 2, 100))
			cancel()
			if err != nil {
				t.Fatalf("acks=all append %d on broker %d: %v", i, b.id, err)
			}
		}
	}
	appendAll(b1, "one", 10)
	end := b1.p.LogEndOffset()
	rnWaitEnd(t, b2.p, end)
	rnWaitEnd(t, b3.p, end)
	if l, ok := f3.Leader(rnTP); !ok || l != 1 {
		t.Fatalf("broker 3 fetches from %d (%v), want 1", l, ok)
	}

	if _, _, err := meta.Elect(rnTP, 2); err != nil {
		t.Fatal(err)
	}
	if err := ld1.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !ld1.Fenced() {
		t.Fatal("the old leader is not fenced by the new epoch")
	}
	b1.hook.SetLeader(nil)
	f2.Unfollow(rnTP)
	if _, ok := f2.Leader(rnTP); ok {
		t.Fatal("still followed after Unfollow")
	}
	b2.lead(t, meta, 2)
	f1 := b1.follower(t, meta, b1, b2, b3)
	defer f1.Close()
	appendAll(b2, "two", 10)
	end = b2.p.LogEndOffset()
	rnWaitEnd(t, b1.p, end)
	rnWaitEnd(t, b3.p, end)
	if l, ok := f3.Leader(rnTP); !ok || l != 2 {
		t.Fatalf("broker 3 fetches from %d (%v), want 2", l, ok)
	}
	f1.Close()
	f3.Close()
	rnSameSegments(t, b2, b1)
	rnSameSegments(t, b2, b3)
}

// TestReplicationFollowerSyncsUnderFlushSync: under FlushSync a
// follower's fetch offset counts toward the leader's high watermark only
// once the follower has fsynced what it acknowledges: whenever an acks=all
// append is acknowledged, the follower's durable end has passed it.
func TestReplicationFollowerSyncsUnderFlushSync(t *testing.T) {
	cfg := topic.Config{Flush: log.FlushSync}
	meta := rnMeta(t, 1, 2)
	b1, b2 := startRNBroker(t, 1, cfg), startRNBroker(t, 2, cfg)
	b1.lead(t, meta, 2)
	f := b2.follower(t, meta, b1, b2)
	defer f.Close()
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := b1.p.AppendBatch(ctx, rnBatch(t, fmt.Sprint(i), 2, 100))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if d := b2.p.DurableEndOffset(); d <= res.LastOffset {
			t.Fatalf("append %d acknowledged at offset %d while the follower's durable end is %d", i, res.LastOffset, d)
		}
	}
}
