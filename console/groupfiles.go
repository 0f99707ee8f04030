package console

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readOffsetsTimeout bounds one read of __consumer_offsets.
const readOffsetsTimeout = 10 * time.Second

// fileGroup is one group as __consumer_offsets records it.
type fileGroup struct {
	committed map[folio.TopicPartition]int64
	meta      *kmsg.GroupMetadataValue
}

// offsetsFile is what the console has read of __consumer_offsets: the
// groups as of next, per partition. Each read goes on from there.
type offsetsFile struct {
	mu     sync.Mutex
	id     topic.ID
	next   map[int32]int64
	groups map[string]*fileGroup
}

// groupsFromFiles reads committed offsets and memberships from
// __consumer_offsets through a plain consumer, as the coordinator loads
// them: the last record of a key wins and a null value deletes it.
// Records that do not decode are skipped, as the coordinator skips them.
// It reads only what was appended since its last call (compaction only
// removes records that a later one supersedes), and starts over when the
// topic was recreated or its log start passed what was read.
func (c *Console) groupsFromFiles(ctx context.Context, hw map[folio.TopicPartition]folio.PartitionInfo) ([]groupView, error) {
	info, err := c.b.DescribeTopic(group.OffsetsTopic)
	if err != nil {
		return nil, nil // no groups yet
	}
	f := &c.offsets
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups == nil || f.id != info.ID {
		f.id, f.next, f.groups = info.ID, map[int32]int64{}, map[string]*fileGroup{}
	}
	for _, p := range info.Partitions {
		if p.LogStartOffset > f.next[p.Partition] && f.next[p.Partition] > 0 {
			f.next, f.groups = map[int32]int64{}, map[string]*fileGroup{}
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readOffsetsTimeout)
	defer cancel()
	groups := f.groups
	get := func(id string) *fileGroup {
		g := groups[id]
		if g == nil {
			g = &fileGroup{committed: map[folio.TopicPartition]int64{}}
			groups[id] = g
		}
		return g
	}
	var cons *folio.Consumer
	defer func() {
		if cons != nil {
			_ = cons.Close()
		}
	}()
	for _, p := range info.Partitions {
		from := max(f.next[p.Partition], p.LogStartOffset)
		if p.HighWatermark <= from {
			continue
		}
		if cons == nil {
			if cons, err = c.b.NewConsumer(&folio.ConsumerOptions{Name: "console", Reset: folio.ResetEarliest}); err != nil {
				return nil, err
			}
		}
		if err := cons.Assign(folio.Assignment{Topic: group.OffsetsTopic, Partition: p.Partition, Start: folio.AtOffset(from)}); err != nil {
			return nil, err
		}
		for {
			pos, err := cons.Position(group.OffsetsTopic, p.Partition)
			if err != nil {
				return nil, err
			}
			if pos >= p.HighWatermark {
				f.next[p.Partition] = pos
				break
			}
			recs, err := cons.Poll(ctx)
			if err != nil {
				// What was applied stays, but the position is not
				// advanced past it: start this partition over next time.
				f.groups = nil
				return nil, fmt.Errorf("reading %s-%d: %w", group.OffsetsTopic, p.Partition, err)
			}
			for i := range recs {
				applyOffsetsRecord(&recs[i], get, groups)
			}
		}
		if err := cons.Unassign(folio.TopicPartition{Topic: group.OffsetsTopic, Partition: p.Partition}); err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []groupView
	for _, id := range ids {
		g := groups[id]
		gv := groupView{Group: id, State: group.StateEmpty.String()}
		owners := map[folio.TopicPartition]string{}
		if m := g.meta; m != nil {
			gv.Generation = m.Generation
			if m.Protocol != nil {
				gv.Protocol = *m.Protocol
			}
			if len(m.Members) > 0 {
				gv.State = group.StateStable.String()
			}
			for _, mem := range m.Members {
				mv := memberView{MemberID: mem.MemberID, ClientID: mem.ClientID, Host: mem.ClientHost}
				if mem.InstanceID != nil {
					mv.InstanceID = *mem.InstanceID
				}
				var a kmsg.ConsumerMemberAssignment
				if a.ReadFrom(mem.Assignment) == nil {
					for _, t := range a.Topics {
						for _, p := range t.Partitions {
							mv.Partitions = append(mv.Partitions, t.Topic+"-"+strconv.Itoa(int(p)))
							owners[folio.TopicPartition{Topic: t.Topic, Partition: p}] = mem.MemberID
						}
					}
				}
				gv.Members = append(gv.Members, mv)
			}
		}
		lagFor(&gv, g.committed, hw, owners)
		out = append(out, gv)
	}
	return out, nil
}

func applyOffsetsRecord(r *folio.Record, get func(string) *fileGroup, groups map[string]*fileGroup) {
	if len(r.Key) < 2 {
		return
	}
	switch binary.BigEndian.Uint16(r.Key) {
	case 0, 1: // an offset commit
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(r.Key) != nil {
			return
		}
		tp := folio.TopicPartition{Topic: k.Topic, Partition: k.Partition}
		if r.Value == nil {
			if g := groups[k.Group]; g != nil {
				delete(g.committed, tp)
			}
			return
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(r.Value) != nil {
			return
		}
		get(k.Group).committed[tp] = v.Offset
	case 2: // a group's metadata
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(r.Key) != nil {
			return
		}
		if r.Value == nil {
			delete(groups, k.Group)
			return
		}
		v := new(kmsg.GroupMetadataValue)
		if v.ReadFrom(r.Value) != nil {
			return
		}
		for i := range v.Members {
			v.Members[i].Subscription = nil // not shown; let it go
		}
		get(k.Group).meta = v
	}
}
