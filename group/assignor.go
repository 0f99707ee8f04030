package group

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RebalanceProtocol is how members give up partitions in a rebalance.
type RebalanceProtocol uint8

const (
	// Eager: every member revokes all its partitions before it rejoins,
	// so a rebalance stops the whole group (range, roundrobin).
	Eager RebalanceProtocol = iota
	// Cooperative: members keep their partitions while they rejoin; the
	// assignment takes a partition from its owner in one rebalance and
	// gives it to the new owner in a second one, after the owner released
	// it (KIP-429, cooperative-sticky).
	Cooperative
)

func (p RebalanceProtocol) String() string {
	if p == Cooperative {
		return "cooperative"
	}
	return "eager"
}

// Assignor divides partitions among the members of a group. The member the
// coordinator elects leader runs it, as Kafka's clients do; every member
// lists the assignors it supports and the group uses one that all support.
type Assignor interface {
	// Name is the protocol name in JoinGroup, e.g. "range"; members of
	// one group must agree on what a name means.
	Name() string
	// Protocol says whether the assignor supports cooperative rebalancing.
	Protocol() RebalanceProtocol
	// Assign maps member ids to partitions. partitions has the partition
	// count of every subscribed topic that exists. A partition may be left
	// out (a cooperative assignor leaves out one that must first be
	// released by its owner). Assign must be deterministic and must give a
	// member only partitions of topics it subscribes to.
	Assign(members []Subscription, partitions map[string]int32) map[string][]TopicPartition
}

// Subscription is one member's subscription, as the leader receives it.
type Subscription struct {
	MemberID   string
	InstanceID string
	// Topics are the topics the member subscribes to.
	Topics []string
	// Owned are the partitions the member owns now (cooperative
	// protocol), and Generation the generation it got them in (-1 if it
	// never had an assignment).
	Owned      []TopicPartition
	Generation int32
	// UserData is the assignor-specific data the member sent.
	UserData []byte
}

// subscriptionVersion is the ConsumerProtocolSubscription version members
// send: v3 carries owned partitions, the generation and the rack.
const subscriptionVersion = 3

// encodeSubscription encodes a member's metadata for JoinGroup in Kafka's
// ConsumerProtocolSubscription format.
func encodeSubscription(topics []string, owned []TopicPartition, generation int32) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: subscriptionVersion, Topics: topics, Generation: generation}
	for _, tp := range sortedPartitions(owned) {
		if n := len(m.OwnedPartitions); n > 0 && m.OwnedPartitions[n-1].Topic == tp.Topic {
			m.OwnedPartitions[n-1].Partitions = append(m.OwnedPartitions[n-1].Partitions, tp.Partition)
			continue
		}
		m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return m.AppendTo(nil)
}

// decodeSubscription decodes a member's ConsumerProtocolSubscription
// (versions 0 to 3; a later version is read by the fields v3 knows, which
// it extends).
func decodeSubscription(memberID, instanceID string, metadata []byte) (Subscription, error) {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(metadata); err != nil {
		return Subscription{}, fmt.Errorf("%w: member %s metadata: %w", ErrAssignment, memberID, err)
	}
	s := Subscription{MemberID: memberID, InstanceID: instanceID, Topics: m.Topics, Generation: m.Generation, UserData: m.UserData}
	if m.Version < 2 {
		s.Generation = -1
	}
	// Java's CooperativeStickyAssignor also carries the generation in its
	// user data (a 4-byte int), for subscriptions older than v2.
	if s.Generation < 0 && len(m.UserData) == 4 {
		s.Generation = int32(binary.BigEndian.Uint32(m.UserData))
	}
	for _, op := range m.OwnedPartitions {
		for _, p := range op.Partitions {
			s.Owned = append(s.Owned, TopicPartition{op.Topic, p})
		}
	}
	return s, nil
}

// encodeAssignment encodes a member's assignment for SyncGroup in Kafka's
// ConsumerProtocolAssignment format.
func encodeAssignment(tps []TopicPartition) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: 1}
	for _, tp := range sortedPartitions(tps) {
		if n := len(a.Topics); n > 0 && a.Topics[n-1].Topic == tp.Topic {
			a.Topics[n-1].Partitions = append(a.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return a.AppendTo(nil)
}

// decodeAssignment decodes a ConsumerProtocolAssignment. An empty one (the
// coordinator's filler for members the leader left out) is no partitions.
func decodeAssignment(b []byte) ([]TopicPartition, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: decoding the assignment: %w", ErrAssignment, err)
	}
	var out []TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{t.Topic, p})
		}
	}
	return out, nil
}

// sortedPartitions returns tps sorted by topic and partition, without
// duplicates, in a new slice.
func sortedPartitions(tps []TopicPartition) []TopicPartition {
	out := slices.Clone(tps)
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return slices.Compact(out)
}

// sortMembers orders members as Kafka's assignors do: static members first,
// by instance id, then dynamic ones by member id.
func sortMembers(members []Subscription) []Subscription {
	out := slices.Clone(members)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.InstanceID != "" && b.InstanceID != "":
			if a.InstanceID != b.InstanceID {
				return a.InstanceID < b.InstanceID
			}
		case a.InstanceID != "":
			return true
		case b.InstanceID != "":
			return false
		}
		return a.MemberID < b.MemberID
	})
	return out
}

// subscribes reports whether s lists topic.
func (s *Subscription) subscribes(topic string) bool {
	return slices.Contains(s.Topics, topic)
}

// Range returns Kafka's RangeAssignor ("range"): per topic, the members
// subscribed to it get contiguous ranges of its partitions, the first ones
// one more when the count does not divide evenly, so same-numbered
// partitions of co-partitioned topics go to the same member. Eager.
func Range() Assignor { return rangeAssignor{} }

type rangeAssignor struct{}

func (rangeAssignor) Name() string                { return "range" }
func (rangeAssignor) Protocol() RebalanceProtocol { return Eager }

func (rangeAssignor) Assign(members []Subscription, partitions map[string]int32) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(members))
	sorted := sortMembers(members)
	topics := make([]string, 0, len(partitions))
	for t := range partitions {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		var subs []string
		for i := range sorted {
			if sorted[i].subscribes(t) {
				subs = append(subs, sorted[i].MemberID)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := partitions[t]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		for i, id := range subs {
			i := int32(i)
			start := i*per + min(i, extra)
			count := per
			if i < extra {
				count++
			}
			for p := start; p < start+count; p++ {
				out[id] = append(out[id], TopicPartition{t, p})
			}
		}
	}
	return out
}

// RoundRobin returns Kafka's RoundRobinAssignor ("roundrobin"): every
// subscribed partition, sorted by topic and partition, goes to the next
// member in turn that subscribes to its topic. Eager.
func RoundRobin() Assignor { return roundRobinAssignor{} }

type roundRobinAssignor struct{}

func (roundRobinAssignor) Name() string                { return "roundrobin" }
func (roundRobinAssignor) Protocol() RebalanceProtocol { return Eager }

func (roundRobinAssignor) Assign(members []Subscription, partitions map[string]int32) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(members))
	sorted := sortMembers(members)
	if len(sorted) == 0 {
		return out
	}
	topics := make([]string, 0, len(partitions))
	for t := range partitions {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	next := 0
	for _, t := range topics {
		for p := int32(0); p < partitions[t]; p++ {
			for tries := 0; tries < len(sorted); tries++ {
				m := &sorted[next]
				next = (next + 1) % len(sorted)
				if m.subscribes(t) {
					out[m.MemberID] = append(out[m.MemberID], TopicPartition{t, p})
					break
				}
			}
		}
	}
	return out
}

// validOwners resolves who owns what from the members' claims: a claim
// counts only for an existing partition of a topic the member subscribes
// to; of several members claiming one partition the one with the highest
// generation owns it, and a tie at the highest generation leaves the
// partition contested (KAFKA-14639): no claimant owns it, and it must not
// be given to anyone until they all released it.
func validOwners(members []Subscription, partitions map[string]int32) (owner map[TopicPartition]string, contested map[TopicPartition]bool) {
	owner = map[TopicPartition]string{}
	contested = map[TopicPartition]bool{}
	gen := map[TopicPartition]int32{}
	for i := range members {
		m := &members[i]
		for _, tp := range m.Owned {
			n, ok := partitions[tp.Topic]
			if !ok || tp.Partition < 0 || tp.Partition >= n || !m.subscribes(tp.Topic) {
				continue
			}
			g, claimed := gen[tp]
			switch {
			case !claimed || m.Generation > g:
				owner[tp], gen[tp] = m.MemberID, m.Generation
				delete(contested, tp)
			case m.Generation == g && owner[tp] != m.MemberID:
				contested[tp] = true
			}
		}
	}
	for tp := range contested {
		delete(owner, tp)
	}
	return owner, contested
}

// withholdTransfers removes from an assignment every partition that some
// other member still claims: under the cooperative protocol a partition
// moves in two rebalances, released by its owner in the first and given to
// its new owner in the second. It returns the partitions withheld.
func withholdTransfers(plan map[string][]TopicPartition, members []Subscription, partitions map[string]int32) int {
	claimedBy := map[TopicPartition][]string{}
	for i := range members {
		for _, tp := range members[i].Owned {
			claimedBy[tp] = append(claimedBy[tp], members[i].MemberID)
		}
	}
	owner, contested := validOwners(members, partitions)
	withheld := 0
	for id, tps := range plan {
		kept := tps[:0]
		for _, tp := range tps {
			ok := !contested[tp]
			if o, has := owner[tp]; ok && has {
				ok = o == id
			} else if ok {
				// Only claims that do not count (a topic the claimant no
				// longer subscribes to, say): the claimant reads the
				// partition until it releases it.
				for _, c := range claimedBy[tp] {
					ok = ok && c == id
				}
			}
			if ok {
				kept = append(kept, tp)
			} else {
				withheld++
			}
		}
		plan[id] = kept
	}
	return withheld
}
