package log_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
)

// ExampleLog_EndOffsetForEpoch shows a leader's lineage: epochs 1 and 3,
// and what a follower asking about each would learn; then a follower log
// copying the leader's batches with AppendFollower ends with the same
// lineage.
func ExampleLog_EndOffsetForEpoch() {
	dir, err := os.MkdirTemp("", "folio-epochs-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	leader, err := log.Open(nil, filepath.Join(dir, "leader"), &log.Options{FlushPolicy: log.FlushNone}, log.State{})
	if err != nil {
		panic(err)
	}
	defer leader.Close()
	var copied []record.Batch
	for _, epoch := range []int32{1, 3} {
		if err := leader.SetLeaderEpoch(epoch); err != nil {
			panic(err)
		}
		b, err := record.NewBuilder(nil)
		if err != nil {
			panic(err)
		}
		for _, v := range []string{"a", "b"} {
			if err := b.Append(record.Record{Value: []byte(v), Timestamp: 1700000000000}); err != nil {
				panic(err)
			}
		}
		batch, err := b.Build(nil)
		if err != nil {
			panic(err)
		}
		if _, _, err := leader.Append(batch); err != nil {
			panic(err)
		}
		copied = append(copied, batch) // Append stamped its offsets and epoch in place
	}
	fmt.Println("lineage:", leader.LeaderEpochs())
	for _, asked := range []int32{1, 2, 3, 4} {
		epoch, end := leader.EndOffsetForEpoch(asked)
		fmt.Printf("epoch %d: ends at %d (epoch %d)\n", asked, end, epoch)
	}

	follower, err := log.Open(nil, filepath.Join(dir, "follower"), &log.Options{FlushPolicy: log.FlushNone}, log.State{})
	if err != nil {
		panic(err)
	}
	defer follower.Close()
	if _, _, err := follower.AppendFollower(copied...); err != nil {
		panic(err)
	}
	fmt.Println("follower lineage:", follower.LeaderEpochs())
	// Output:
	// lineage: [{1 0} {3 2}]
	// epoch 1: ends at 2 (epoch 1)
	// epoch 2: ends at 2 (epoch 1)
	// epoch 3: ends at 4 (epoch 3)
	// epoch 4: ends at -1 (epoch -1)
	// follower lineage: [{1 0} {3 2}]
}
