package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch v4..v16 (v13+ names topics by id). The response is framed by this
// package (fetch_frame.go) so the record bytes go from the segment to the
// socket by the topic's read path.
//
// Semantics, as Kafka's:
//   - MaxBytes bounds the response and PartitionMaxBytes each partition,
//     except that the first partition with data always gets its first
//     whole batch, however large (so a batch above the limits is never
//     stuck). A later partition whose first batch does not fit the bytes
//     left gets no records this time.
//   - Reads stop at the high watermark, for read_uncommitted and
//     read_committed alike (there are no transactions, so the last stable
//     offset is the high watermark).
//   - MinBytes 0 answers at once. Fewer than MinBytes ready: the fetch parks until MinBytes are there,
//     MaxWaitMs passes or the server shuts down. While parked it waits on
//     one channel of its own, with one partition.WaitFunc callback per
//     partition: no goroutine per partition and no polling.
//   - A partition error (unknown topic, offset out of range) answers at
//     once.
//   - Fetch sessions (KIP-227) are not kept: every response carries
//     session id 0 ("no session"), so clients send full fetches; a request
//     naming a session gets FETCH_SESSION_ID_NOT_FOUND, which makes them
//     start over without one.
//   - A follower's fetch (replica id >= 0: ReplicaID, or ReplicaState.ID
//     from v15) on a Backend that is a ReplicaBackend is served as a
//     Kafka leader serves it (see followerFetch): reads stop at the log
//     end, not the high watermark, and a parked fetch wakes on an append;
//     each partition's current leader epoch is checked, its last fetched
//     epoch (v12+, KIP-320) is checked against the leader's epoch cache
//     and a DivergingEpoch answered when the follower's tail is not in
//     the leader's lineage; otherwise the fetch offset is reported to the
//     partition's leader (its follower's log end), and the high watermark
//     is the leader's. A broker that does not lead the partition answers
//     NOT_LEADER_OR_FOLLOWER. On a Backend without replication a
//     follower's fetch is served as a consumer's.
func init() { register(kmsg.Fetch.Int16(), 4, 16, handleFetch) }

// fetchResp is a built fetch response waiting to be written.
type fetchResp struct {
	version  int16
	errCode  int16
	topics   []fetchTopic
	released bool
}

func (f *fetchResp) writeTo(w *respWriter, h *reqHeader) error {
	return w.writeFetchFrame(buildFetchFrame(f.version, h.corr, f.errCode, 0, f.topics))
}

func (f *fetchResp) release() {
	if f.released {
		return
	}
	f.released = true
	for _, t := range f.topics {
		for _, p := range t.parts {
			if p.records != nil {
				p.records.Release()
			}
		}
	}
}

// bytes returns how many record bytes the response holds.
func (f *fetchResp) bytes() int64 {
	var n int64
	for _, t := range f.topics {
		for _, p := range t.parts {
			if p.records != nil {
				n += int64(p.records.Len())
			}
		}
	}
	return n
}

// fetchTarget is one partition a fetch asks for, resolved.
type fetchTarget struct {
	ti, pi int // index in the request
	p      *partition.Partition
	err    error
	// diverging is set for a follower whose last fetched epoch is not in
	// the leader's lineage: the partition is answered with it and no
	// records.
	diverging *divergingEpoch
}

// divergingEpoch is a Fetch response's DivergingEpoch (v12+): the largest
// epoch of the leader's lineage not above the follower's last fetched one
// and where it ends in the leader's log.
type divergingEpoch struct {
	epoch int32
	end   int64
}

func handleFetch(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.FetchRequest)
	s := rc.s
	if req.SessionID != 0 {
		return &fetchResp{version: req.Version, errCode: kerr.FetchSessionIDNotFound.Code}, nil
	}
	// Resolve the partitions once; the long poll re-reads them.
	var targets []fetchTarget
	names := make([]string, len(req.Topics))
	for ti, t := range req.Topics {
		name, terr := t.Topic, error(nil)
		if req.Version >= 13 {
			var in topic.Info
			if in, terr = s.b.TopicInfoByID(topic.ID(t.TopicID)); terr == nil {
				name = in.Name
			} else if errors.Is(terr, topic.ErrNotFound) {
				terr = kerr.UnknownTopicID
			}
		}
		names[ti] = name
		for pi, fp := range t.Partitions {
			tg := fetchTarget{ti: ti, pi: pi, err: terr}
			if terr == nil {
				tg.p, tg.err = s.b.Partition(name, fp.Partition)
			}
			targets = append(targets, tg)
		}
	}
	follower := false
	if rb, ok := s.b.(ReplicaBackend); ok {
		replica, incarnation := req.ReplicaID, int64(-1)
		if req.Version >= 15 {
			replica, incarnation = req.ReplicaState.ID, req.ReplicaState.Epoch
		}
		if follower = replica >= 0; follower {
			for i := range targets {
				tg := &targets[i]
				if tg.err == nil {
					fp := &req.Topics[tg.ti].Partitions[tg.pi]
					tg.diverging, tg.err = followerFetch(ctx, rb, tg.p, req.Version, replica, incarnation, fp)
					if tg.err != nil && errs.Kafka(tg.err) == nil {
						// A refusal without a Kafka code must not read as
						// success (code 0).
						tg.err = fmt.Errorf("%w: %w", kerr.UnknownServerError, tg.err)
					}
				}
			}
		}
	}
	if !follower {
		for i := range targets {
			if tg := &targets[i]; tg.err == nil {
				tg.err = s.consumerFetchable(names[tg.ti], tg.p.Index()) // cluster.go
			}
		}
	}
	maxWait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	wake := make(chan struct{}, 1)
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	cancels := make([]func(), 0, len(targets))
	for {
		resp, failed := s.readFetch(req, names, targets, follower)
		if failed || resp.bytes() >= int64(req.MinBytes) || maxWait == 0 {
			if !follower {
				countDelivered(req, resp, targets)
			}
			return resp, nil
		}
		select {
		case <-deadline.C:
			if !follower {
				countDelivered(req, resp, targets)
			}
			return resp, nil
		default:
		}
		resp.release()
		// Park: one callback per partition, all on the one wake channel,
		// each for a record past what this read saw (a partition with too
		// few bytes for MinBytes waits for more, not for what it has).
		for _, tg := range targets {
			fp := &req.Topics[tg.ti].Partitions[tg.pi]
			seen := resp.topics[tg.ti].parts[tg.pi].seen
			if follower {
				cancels = append(cancels, tg.p.WaitEndFunc(max(fp.FetchOffset, seen), notify))
			} else {
				cancels = append(cancels, tg.p.WaitFunc(max(fp.FetchOffset, seen), notify))
			}
		}
		if fn := s.onPark.Load(); fn != nil {
			(*fn)()
		}
		var stop bool
		select {
		case <-wake:
		case <-deadline.C:
			stop = true
		case <-s.stopping:
			stop = true
		case <-ctx.Done():
			stop = true
		}
		for _, c := range cancels {
			c()
		}
		cancels = cancels[:0]
		if stop {
			resp, _ := s.readFetch(req, names, targets, follower)
			if !follower {
				countDelivered(req, resp, targets)
			}
			return resp, nil
		}
	}
}

// readFetch reads every partition of a fetch once, a follower's up to the
// log end. failed reports a partition error or a diverging epoch, which
// answers the fetch at once.
func (s *Server) readFetch(req *kmsg.FetchRequest, names []string, targets []fetchTarget, follower bool) (*fetchResp, bool) {
	resp := &fetchResp{version: req.Version, topics: make([]fetchTopic, len(req.Topics))}
	for ti, t := range req.Topics {
		resp.topics[ti] = fetchTopic{name: names[ti], id: t.TopicID, parts: make([]fetchPart, len(t.Partitions))}
	}
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	var total int64
	failed := false
	for _, tg := range targets {
		fp := &req.Topics[tg.ti].Partitions[tg.pi]
		out := &resp.topics[tg.ti].parts[tg.pi]
		out.partition = fp.Partition
		out.hw, out.lso, out.start = -1, -1, -1
		out.aborted = req.IsolationLevel == 1
		if tg.err != nil {
			out.errCode, failed = errs.Code(tg.err), true
			continue
		}
		p := tg.p
		out.hw = p.HighWatermark()
		out.lso, out.start = out.hw, p.LogStartOffset()
		out.seen = out.hw
		bound := log.BoundHighWatermark
		if follower {
			out.seen, bound = p.LogEndOffset(), log.BoundLogEnd
		}
		if tg.diverging != nil {
			out.diverging, failed = tg.diverging, true
			continue
		}
		limit := min(int64(fp.PartitionMaxBytes), budget-total)
		if limit <= 0 && total > 0 {
			continue
		}
		v, err := p.Read(fp.FetchOffset, int(max(limit, 1)), bound)
		switch {
		case errors.Is(err, log.ErrNoData):
			continue
		case errors.Is(err, log.ErrClosed) && p.Deleted():
			out.errCode, failed = kerr.UnknownTopicOrPartition.Code, true
			continue
		case err != nil:
			out.errCode, failed = partitionCode(err), true
			continue
		}
		if total > 0 && int64(v.Len()) > limit {
			v.Release() // only the first partition with data may pass the limits
			continue
		}
		out.records = v
		total += int64(v.Len())
	}
	return resp, failed
}

// followerFetch checks one partition of a follower's fetch, as a Kafka
// leader does before it reads: the broker must lead the partition (else
// NOT_LEADER_OR_FOLLOWER), in the follower's current leader epoch (-1
// skips the check; else FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH); a
// last fetched epoch (v12+) whose end in the leader's lineage is below the
// fetch offset, or that the leader's lineage lacks, is a divergence: the
// partition is answered with DivergingEpoch and the fetch does not count as
// the follower's position. A last fetched epoch above the leader's own
// (no end in the leader's lineage) is OFFSET_OUT_OF_RANGE, as in Kafka.
// Otherwise the fetch offset is reported to the leader as the follower's
// log end.
func followerFetch(ctx context.Context, rb ReplicaBackend, p *partition.Partition, version int16, replica int32, incarnation int64, fp *kmsg.FetchRequestTopicPartition) (*divergingEpoch, error) {
	ld, err := rb.PartitionLeader(p.Topic(), p.Index())
	if err != nil {
		return nil, err
	}
	epoch := fp.CurrentLeaderEpoch
	if epoch < 0 {
		epoch = ld.Epoch()
	} else if err := ld.CheckEpoch(epoch); err != nil {
		return nil, err
	}
	if version >= 12 && fp.LastFetchedEpoch >= 0 {
		ep, end := leaderEndOffsetForEpoch(p, fp.LastFetchedEpoch)
		if ep < 0 || end < 0 {
			// No end for that epoch in the lineage: an epoch above the
			// leader's own (a zombie's tail), or an empty cache. Kafka's
			// leader (Partition.readRecords) fails the partition with
			// OFFSET_OUT_OF_RANGE; the follower then reconciles anew.
			return nil, fmt.Errorf("%w: no end offset for last fetched epoch %d (leader epoch %d)",
				kerr.OffsetOutOfRange, fp.LastFetchedEpoch, p.LeaderEpoch())
		}
		if ep < fp.LastFetchedEpoch || end < fp.FetchOffset {
			return &divergingEpoch{epoch: ep, end: end}, nil
		}
	}
	if _, err := ld.FollowerFetched(ctx, replica, incarnation, epoch, fp.FetchOffset); err != nil {
		return nil, err
	}
	return nil, nil
}
