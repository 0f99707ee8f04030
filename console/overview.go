package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/group"
)

// overview is the front page's data.
type overview struct {
	Topics []topicView
	Groups []groupView
	// GroupsFrom says where the group data came from.
	GroupsFrom string
	Stats      folio.Stats
}

type topicView struct {
	Name         string
	Internal     bool
	Settings     []settingView
	Partitions   []partView
	Bytes        int64
	Records      int64 // visible records (high watermark - log start), offset gaps counted
	LogEndOffset int64
	// RecordsOut is what the Broker's consumers and fetches read since it
	// opened (PartitionStats.RecordsOut, summed); zero for a read-only
	// Broker, whose readers are in another process.
	RecordsOut int64
}

type settingView struct{ Key, Value string }

type partView struct {
	Partition                              int32
	LogStart, HighWatermark, LogEnd, Bytes int64
	Segments                               int
	Failed                                 bool
}

type groupView struct {
	Group, State, Protocol string
	Generation             int32
	Members                []memberView
	Lag                    []lagView
	TotalLag               int64
	TotalCommitted         int64
}

type memberView struct {
	MemberID, ClientID, InstanceID, Host string
	Partitions                           []string
}

type lagView struct {
	Topic                              string
	Partition                          int32
	Committed, HighWatermark, LogStart int64
	Lag                                int64
	MemberID                           string
}

// shownSettings are the topic settings the overview shows.
var shownSettings = map[string]bool{
	"retention.ms": true, "retention.bytes": true, "cleanup.policy": true, "flush": true,
	"segment.bytes": true, "compression.type": true,
}

func (c *Console) overview(ctx context.Context) (overview, error) {
	var ov overview
	ov.Stats = c.b.Stats()
	byPart := map[folio.TopicPartition]folio.PartitionStats{}
	for _, p := range ov.Stats.Partitions {
		byPart[folio.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p
	}
	topics, err := c.b.Topics()
	if err != nil {
		return ov, fmt.Errorf("topics: %w", err)
	}
	// Applications' topics first, Folio's own (__consumer_offsets) after.
	sort.Slice(topics, func(i, j int) bool {
		if topics[i].Internal != topics[j].Internal {
			return !topics[i].Internal
		}
		return topics[i].Name < topics[j].Name
	})
	hw := map[folio.TopicPartition]folio.PartitionInfo{}
	for _, t := range topics {
		tv := topicView{Name: t.Name, Internal: t.Internal}
		for _, s := range t.Config.Settings() {
			if shownSettings[s.Key] {
				tv.Settings = append(tv.Settings, settingView{s.Key, s.Value})
			}
		}
		for _, p := range t.Partitions {
			tp := folio.TopicPartition{Topic: t.Name, Partition: p.Partition}
			hw[tp] = p
			ps := byPart[tp]
			tv.Partitions = append(tv.Partitions, partView{
				Partition: p.Partition, LogStart: p.LogStartOffset, HighWatermark: p.HighWatermark,
				LogEnd: p.LogEndOffset, Bytes: ps.Bytes, Segments: ps.Segments, Failed: ps.Failed,
			})
			tv.Bytes += ps.Bytes
			tv.Records += max(p.HighWatermark-p.LogStartOffset, 0)
			tv.LogEndOffset += p.LogEndOffset
			tv.RecordsOut += ps.RecordsOut
		}
		ov.Topics = append(ov.Topics, tv)
	}
	ov.Groups, ov.GroupsFrom, err = c.groups(ctx, hw)
	return ov, err
}

// groups returns the consumer groups: from the coordinator when the Broker
// has one, else (a read-only Broker) from the files of __consumer_offsets.
func (c *Console) groups(ctx context.Context, hw map[folio.TopicPartition]folio.PartitionInfo) ([]groupView, string, error) {
	if c.b.ReadOnly() {
		gs, err := c.groupsFromFiles(ctx, hw)
		return gs, "read from the files of " + group.OffsetsTopic + " (read-only: members as of the last rebalance recorded)", err
	}
	if c.b.Stats().Groups.Groups == 0 {
		// No coordinator, or one with no group: asking for it could create
		// __consumer_offsets, which the console must never do.
		return nil, "the Broker's group coordinator", nil
	}
	coord, err := c.b.GroupCoordinator()
	if err != nil {
		return nil, "", fmt.Errorf("groups: %w", err)
	}
	listed, err := coord.ListGroups(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("groups: %w", err)
	}
	ids := make([]string, 0, len(listed))
	for _, g := range listed {
		ids = append(ids, g.Group)
	}
	sort.Strings(ids)
	descs, err := coord.DescribeGroups(ctx, ids)
	if err != nil {
		return nil, "", fmt.Errorf("groups: %w", err)
	}
	var out []groupView
	var errs []error
	for _, d := range descs {
		gv := groupView{Group: d.Group, State: d.State.String(), Protocol: d.Protocol, Generation: d.GenerationID}
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("group %q: %w", d.Group, d.Err))
		}
		lags, err := c.b.GroupLag(d.Group)
		if err != nil {
			errs = append(errs, fmt.Errorf("group %q: lag: %w", d.Group, err))
		}
		owned := map[string][]string{}
		for _, l := range lags {
			gv.Lag = append(gv.Lag, lagView{
				Topic: l.Topic, Partition: l.Partition, Committed: l.Committed,
				HighWatermark: l.HighWatermark, LogStart: l.LogStartOffset, Lag: l.Lag, MemberID: l.MemberID,
			})
			gv.TotalLag += l.Lag
			if l.Committed > 0 {
				gv.TotalCommitted += l.Committed
			}
			if l.MemberID != "" {
				owned[l.MemberID] = append(owned[l.MemberID], l.Topic+"-"+strconv.Itoa(int(l.Partition)))
			}
		}
		for _, m := range d.Members {
			gv.Members = append(gv.Members, memberView{
				MemberID: m.MemberID, ClientID: m.ClientID, InstanceID: m.InstanceID, Host: m.ClientHost,
				Partitions: owned[m.MemberID],
			})
		}
		out = append(out, gv)
	}
	return out, "the Broker's group coordinator", errors.Join(errs...)
}

// lagFor fills a group's lag from committed offsets and the partitions'
// offsets, as the coordinator computes it.
func lagFor(gv *groupView, committed map[folio.TopicPartition]int64, hw map[folio.TopicPartition]folio.PartitionInfo, owners map[folio.TopicPartition]string) {
	tps := make([]folio.TopicPartition, 0, len(committed))
	for tp := range committed {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	for _, tp := range tps {
		off := committed[tp]
		p, ok := hw[tp]
		lv := lagView{Topic: tp.Topic, Partition: tp.Partition, Committed: off, HighWatermark: -1, LogStart: -1, MemberID: owners[tp]}
		if ok {
			lv.HighWatermark, lv.LogStart = p.HighWatermark, p.LogStartOffset
			lv.Lag = max(p.HighWatermark-max(off, p.LogStartOffset), 0)
		}
		gv.Lag = append(gv.Lag, lv)
		gv.TotalLag += lv.Lag
		gv.TotalCommitted += max(off, 0)
	}
}
