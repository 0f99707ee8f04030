package group_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/vfs"
)

// exampleTopics is the Topics view of one topic with partition logs.
type exampleTopics struct {
	name string
	logs []*log.Log
}

func (t exampleTopics) Partitions(topic string) (int32, error) {
	if topic != t.name {
		return 0, fmt.Errorf("%q: %w", topic, group.ErrUnknownTopicOrPartition)
	}
	return int32(len(t.logs)), nil
}

func (t exampleTopics) Offsets(topic string, p int32) (group.PartitionOffsets, error) {
	if topic != t.name || p < 0 || int(p) >= len(t.logs) {
		return group.PartitionOffsets{}, group.ErrUnknownTopicOrPartition
	}
	l := t.logs[p]
	return group.PartitionOffsets{LogStart: l.LogStartOffset(), HighWatermark: l.HighWatermark(), LogEnd: l.LogEndOffset()}, nil
}

// rec is one record as the example's reader returns it.
type rec struct {
	tp     group.TopicPartition
	offset int64
	value  string
}

// logReader is a minimal Reader over partition logs: it reads the assigned
// partitions in turn and blocks on the first one's Wait when none has data.
type logReader struct {
	topics exampleTopics
	mu     sync.Mutex // guards pos
	pos    map[group.TopicPartition]int64
}

func (r *logReader) Assign(starts []group.StartOffset) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range starts {
		r.pos[s.TopicPartition] = s.Offset
	}
	return nil
}

func (r *logReader) Unassign(tps []group.TopicPartition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range tps {
		delete(r.pos, tp)
	}
	return nil
}

func (r *logReader) Poll(ctx context.Context) ([]rec, error) {
	for {
		r.mu.Lock()
		var out []rec
		var waitOn *log.Log
		var waitAt int64
		for p := range int32(len(r.topics.logs)) {
			tp := group.TopicPartition{Topic: r.topics.name, Partition: p}
			pos, ok := r.pos[tp]
			if !ok {
				continue
			}
			l := r.topics.logs[p]
			if pos >= l.HighWatermark() {
				waitOn, waitAt = l, pos
				continue
			}
			v, err := l.Read(pos, 1<<20)
			if err != nil {
				r.mu.Unlock()
				return nil, err
			}
			buf, _ := v.Bytes()
			for len(buf) > 0 {
				b, rest, err := record.Parse(buf)
				if err != nil {
					break
				}
				buf = rest
				it := b.Records(nil)
				for it.Next() {
					if it.Record().Offset() >= pos {
						out = append(out, rec{tp, it.Record().Offset(), string(it.Record().Value())})
					}
				}
				it.Close()
				r.pos[tp] = b.LastOffset() + 1
			}
			v.Release()
		}
		r.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		if waitOn == nil {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if err := waitOn.Wait(ctx, waitAt); err != nil {
			return nil, err
		}
	}
}

func (r *logReader) Locate(x rec) (group.TopicPartition, int64) { return x.tp, x.offset }

// Example joins a group over a two-partition topic, consumes what was
// produced, commits it, and shows the committed offsets and the lag. In a
// program the Broker wires the coordinator and readers; here the logs are
// opened by hand.
func Example() {
	dir, _ := os.MkdirTemp("", "group-example")
	defer os.RemoveAll(dir)
	open := func(name string) *log.Log {
		l, err := log.Open(vfs.Default, filepath.Join(dir, name), nil, log.State{})
		if err != nil {
			panic(err)
		}
		return l
	}
	data := exampleTopics{name: "orders", logs: []*log.Log{open("orders-0"), open("orders-1")}}
	offsets := []*log.Log{open("__consumer_offsets-0")}
	defer func() {
		for _, l := range append(data.logs, offsets...) {
			l.Close()
		}
	}()
	for i := range 6 {
		b, _ := record.NewBuilder(nil)
		_ = b.Append(record.Record{Value: []byte(fmt.Sprintf("order-%d", i))})
		batch, _ := b.Build(nil)
		_, _, _ = data.logs[i%2].Append(batch)
	}

	coord, err := group.NewCoordinator(&group.Options{Store: group.LogStore(offsets), Topics: data})
	if err != nil {
		panic(err)
	}
	defer coord.Close()
	ctx := context.Background()
	reader := &logReader{topics: data, pos: map[group.TopicPartition]int64{}}
	m, err := group.Join(ctx, coord, "billing", reader, &group.MemberOptions{
		Topics: []string{"orders"},
		Reset:  group.ResetEarliest,
		OnAssigned: func(_ context.Context, tps []group.TopicPartition) {
			fmt.Println("assigned", tps)
		},
	})
	if err != nil {
		panic(err)
	}
	seen := 0
	for seen < 6 {
		recs, err := m.Poll(ctx)
		if err != nil {
			panic(err)
		}
		seen += len(recs)
	}
	if err := m.Commit(ctx); err != nil {
		panic(err)
	}
	lag, _ := coord.Lag("billing")
	for _, l := range lag {
		fmt.Printf("%s-%d committed %d lag %d\n", l.Topic, l.Partition, l.Committed, l.Lag)
	}
	_ = m.Close()
	// Output:
	// assigned [orders-0 orders-1]
	// orders-0 committed 3 lag 0
	// orders-1 committed 3 lag 0
}
