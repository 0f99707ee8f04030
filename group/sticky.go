package group

import (
	"cmp"
	"slices"
	"sort"
)

// CooperativeSticky returns the cooperative sticky assignor
// ("cooperative-sticky", Kafka's CooperativeStickyAssignor): a balanced
// assignment (member counts differ by at most one where subscriptions
// allow) that keeps each partition with its current owner where it can,
// under the cooperative protocol: a partition that must move is first only
// taken from its owner, and given to its new owner in the next rebalance,
// once the owner has released it, so no partition ever has two owners.
func CooperativeSticky() Assignor { return stickyAssignor{} }

type stickyAssignor struct{}

func (stickyAssignor) Name() string                { return "cooperative-sticky" }
func (stickyAssignor) Protocol() RebalanceProtocol { return Cooperative }

func (stickyAssignor) Assign(members []Subscription, partitions map[string]int32) map[string][]TopicPartition {
	plan := stickyPlan(members, partitions)
	withholdTransfers(plan, members, partitions)
	return plan
}

// stickyPlan computes the balanced sticky assignment before transfers are
// withheld. Contested partitions are left out.
func stickyPlan(members []Subscription, partitions map[string]int32) map[string][]TopicPartition {
	sorted := sortMembers(members)
	out := make(map[string][]TopicPartition, len(sorted))
	if len(sorted) == 0 {
		return out
	}
	index := make(map[string]int, len(sorted))
	for i := range sorted {
		index[sorted[i].MemberID] = i
	}
	// eligible lists, per topic, the members (by index) subscribed to it.
	eligible := map[string][]int{}
	for i := range sorted {
		for _, t := range sorted[i].Topics {
			if _, ok := partitions[t]; ok && !slices.Contains(eligible[t], i) {
				eligible[t] = append(eligible[t], i)
			}
		}
	}
	owner, contested := validOwners(sorted, partitions)
	cur := make([][]TopicPartition, len(sorted))

	// Owners keep what they own.
	owned := make([]TopicPartition, 0, len(owner))
	for tp := range owner {
		owned = append(owned, tp)
	}
	slices.SortFunc(owned, cmpTP)
	for _, tp := range owned {
		i := index[owner[tp]]
		cur[i] = append(cur[i], tp)
	}

	// The rest go to the least loaded eligible member, the most
	// constrained partitions (fewest eligible members) first.
	var free []TopicPartition
	topics := make([]string, 0, len(eligible))
	for t := range eligible {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		for p := int32(0); p < partitions[t]; p++ {
			tp := TopicPartition{t, p}
			if _, ok := owner[tp]; ok || contested[tp] {
				continue
			}
			free = append(free, tp)
		}
	}
	slices.SortStableFunc(free, func(a, b TopicPartition) int {
		return cmp.Compare(len(eligible[a.Topic]), len(eligible[b.Topic]))
	})
	least := func(t string) int {
		best := -1
		for _, i := range eligible[t] {
			if best < 0 || len(cur[i]) < len(cur[best]) {
				best = i
			}
		}
		return best
	}
	for _, tp := range free {
		i := least(tp.Topic)
		cur[i] = append(cur[i], tp)
	}

	// Balance: move one partition at a time from the most loaded member
	// that can give one to an eligible member holding at least two fewer,
	// taking its most recently added partition first. Each move lowers the
	// sum of squared counts, so this ends. Moving only from a most loaded
	// member keeps the plan sticky: a member loses a partition it owns only
	// while it holds the most, so it never drops below its balanced share
	// (a member taking partitions from several at once in one pass could
	// fall below it while the others were still above, and then be refilled
	// with partitions that had to move from someone else).
	order := make([]int, len(sorted))
	for {
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(cur[b]), len(cur[a])) })
		moved := false
		for _, m := range order {
			for j := len(cur[m]) - 1; j >= 0 && !moved; j-- {
				tp := cur[m][j]
				n := least(tp.Topic)
				if n < 0 || len(cur[n])+1 >= len(cur[m]) {
					continue
				}
				cur[m] = slices.Delete(cur[m], j, j+1)
				cur[n] = append(cur[n], tp)
				moved = true
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	for i := range sorted {
		out[sorted[i].MemberID] = sortedPartitions(cur[i])
	}
	return out
}

func cmpTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
