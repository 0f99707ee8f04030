package replica_test

import (
	"context"
	"fmt"

	"github.com/foliolog/folio/replica"
)

// leaderLog stands for the leader's partition: its end and the high
// watermark the leader sets.
type leaderLog struct{ end, hw int64 }

func (l *leaderLog) LogEndOffset() int64            { return l.end }
func (l *leaderLog) SetHighWatermark(o int64) error { l.hw = o; return nil }

// A leader of three replicas with min.insync.replicas 2: the high
// watermark follows the slowest in-sync follower, and acks=all is
// acknowledged once it passes the append.
func Example() {
	ctx := context.Background()
	tp := replica.TopicPartition{Topic: "orders", Partition: 0}
	meta := replica.NewMem()
	for id := int32(1); id <= 3; id++ {
		meta.Register(id, 1)
	}
	if _, err := meta.Create(tp, 1, 2, 3); err != nil {
		panic(err)
	}
	log := &leaderLog{}
	ld, err := replica.NewLeader(ctx, meta, tp, 1, log, &replica.LeaderOptions{MinInsyncReplicas: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println("admit:", ld.Admit())
	log.end = 3 // the append of offsets 0-2 is in the leader's log
	for _, f := range []replica.Fetch{{Replica: 2, Offset: 3}, {Replica: 3, Offset: 1}} {
		f.Incarnation = 1
		hw, _ := ld.Fetched(ctx, f)
		acked, _ := ld.Acked(2)
		fmt.Printf("replica %d at %d: high watermark %d, offset 2 acknowledged: %v\n", f.Replica, f.Offset, hw, acked)
	}
	hw, _ := ld.Fetched(ctx, replica.Fetch{Replica: 3, Incarnation: 1, Offset: 3})
	acked, _ := ld.Acked(2)
	fmt.Printf("replica 3 at 3: high watermark %d, offset 2 acknowledged: %v\n", hw, acked)
	// Output:
	// admit: <nil>
	// replica 2 at 3: high watermark -1, offset 2 acknowledged: false
	// replica 3 at 1: high watermark 1, offset 2 acknowledged: false
	// replica 3 at 3: high watermark 3, offset 2 acknowledged: true
}
