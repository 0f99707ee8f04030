package group

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func tps(spec ...any) []TopicPartition {
	var out []TopicPartition
	for i := 0; i < len(spec); i += 2 {
		out = append(out, TopicPartition{spec[i].(string), int32(spec[i+1].(int))})
	}
	return out
}

func TestRangeAssignorIsKafkas(t *testing.T) {
	// Kafka's javadoc example: two consumers, t0 and t1 with 3 partitions.
	members := []Subscription{
		{MemberID: "C1", Topics: []string{"t0", "t1"}},
		{MemberID: "C0", Topics: []string{"t0", "t1"}},
	}
	got := Range().Assign(members, map[string]int32{"t0": 3, "t1": 3})
	want := map[string][]TopicPartition{
		"C0": tps("t0", 0, "t0", 1, "t1", 0, "t1", 1),
		"C1": tps("t0", 2, "t1", 2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("range: %v, want %v", got, want)
	}
	// Static members sort by instance id, ahead of dynamic ones.
	members = []Subscription{
		{MemberID: "a", Topics: []string{"t0"}},
		{MemberID: "z", InstanceID: "i2", Topics: []string{"t0"}},
		{MemberID: "y", InstanceID: "i1", Topics: []string{"t0"}},
	}
	got = Range().Assign(members, map[string]int32{"t0": 4})
	want = map[string][]TopicPartition{"y": tps("t0", 0, "t0", 1), "z": tps("t0", 2), "a": tps("t0", 3)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("range with static members: %v, want %v", got, want)
	}
}

func TestRoundRobinAssignorIsKafkas(t *testing.T) {
	members := []Subscription{
		{MemberID: "C0", Topics: []string{"t0", "t1"}},
		{MemberID: "C1", Topics: []string{"t0", "t1"}},
	}
	got := RoundRobin().Assign(members, map[string]int32{"t0": 3, "t1": 3})
	want := map[string][]TopicPartition{
		"C0": tps("t0", 0, "t0", 2, "t1", 1),
		"C1": tps("t0", 1, "t1", 0, "t1", 2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("roundrobin: %v, want %v", got, want)
	}
	// Kafka's javadoc example with different subscriptions.
	members = []Subscription{
		{MemberID: "C0", Topics: []string{"t0"}},
		{MemberID: "C1", Topics: []string{"t0", "t1"}},
		{MemberID: "C2", Topics: []string{"t0", "t1", "t2"}},
	}
	got = RoundRobin().Assign(members, map[string]int32{"t0": 1, "t1": 2, "t2": 3})
	want = map[string][]TopicPartition{
		"C0": tps("t0", 0),
		"C1": tps("t1", 0),
		"C2": tps("t1", 1, "t2", 0, "t2", 1, "t2", 2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("roundrobin with different subscriptions: %v, want %v", got, want)
	}
}

func TestSubscriptionAndAssignmentCodec(t *testing.T) {
	owned := tps("b", 1, "a", 2, "a", 0)
	b := encodeSubscription([]string{"a", "b"}, owned, 7)
	s, err := decodeSubscription("m", "i", b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, Subscription{MemberID: "m", InstanceID: "i", Topics: []string{"a", "b"},
		Owned: tps("a", 0, "a", 2, "b", 1), Generation: 7}) {
		t.Fatalf("decoded %+v", s)
	}
	// A v1 subscription from an older Java client, with the generation in
	// the cooperative-sticky user data.
	v1 := []byte{0, 1, 0, 0, 0, 1, 0, 1, 'a', 0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0}
	s, err = decodeSubscription("m", "", v1)
	if err != nil || s.Generation != 9 || !slices.Equal(s.Topics, []string{"a"}) {
		t.Fatalf("v1: %+v %v", s, err)
	}
	if _, err := decodeSubscription("m", "", []byte{0, 3, 0}); err == nil {
		t.Fatal("truncated subscription decoded")
	}
	a := encodeAssignment(tps("y", 2, "x", 1, "y", 0))
	got, err := decodeAssignment(a)
	if err != nil || !slices.Equal(got, tps("x", 1, "y", 0, "y", 2)) {
		t.Fatalf("assignment %v %v", got, err)
	}
	if got, err := decodeAssignment(nil); err != nil || got != nil {
		t.Fatalf("empty assignment %v %v", got, err)
	}
	if _, err := decodeAssignment([]byte{0, 1, 0, 0, 0, 5}); err == nil {
		t.Fatal("truncated assignment decoded")
	}
}

func TestValidOwnersResolvesClaims(t *testing.T) {
	parts := map[string]int32{"t": 3}
	members := []Subscription{
		{MemberID: "a", Topics: []string{"t"}, Owned: tps("t", 0, "t", 1, "t", 9), Generation: 5},
		{MemberID: "b", Topics: []string{"t"}, Owned: tps("t", 1, "t", 2), Generation: 4},
		{MemberID: "c", Topics: []string{"t"}, Owned: tps("t", 2), Generation: 4},
		{MemberID: "d", Topics: []string{"u"}, Owned: tps("t", 0), Generation: 9},
	}
	owner, contested := validOwners(members, parts)
	// t-1: a's higher generation wins over b; t-2: b and c tie; t-9 does
	// not exist; d does not subscribe to t.
	if !reflect.DeepEqual(owner, map[TopicPartition]string{{"t", 0}: "a", {"t", 1}: "a"}) ||
		!reflect.DeepEqual(contested, map[TopicPartition]bool{{"t", 2}: true}) {
		t.Fatalf("owners %v contested %v", owner, contested)
	}
	plan := map[string][]TopicPartition{"a": tps("t", 1), "b": tps("t", 0), "c": tps("t", 2), "e": tps("t", 1)}
	if n := withholdTransfers(plan, members, parts); n != 3 {
		t.Fatalf("withheld %d, want 3: %v", n, plan)
	}
	// b may not get t-0 (a owns it; d's invalid claim aside), nobody gets
	// contested t-2.
	if !reflect.DeepEqual(plan, map[string][]TopicPartition{"a": tps("t", 1), "b": {}, "c": {}, "e": {}}) {
		t.Fatalf("plan after withholding %v", plan)
	}
}

// TestCooperativeStickyProperties runs the assignor over random groups,
// subscriptions and previous assignments, through both rebalances of a
// cooperative change, and checks what KIP-429 promises.
func TestCooperativeStickyProperties(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for iter := range 400 {
		nTopics := 1 + rng.IntN(3)
		parts := map[string]int32{}
		var names []string
		for i := range nTopics {
			name := fmt.Sprintf("t%d", i)
			names = append(names, name)
			parts[name] = int32(1 + rng.IntN(12))
		}
		same := rng.IntN(2) == 0
		var members []Subscription
		for i := range 1 + rng.IntN(7) {
			s := Subscription{MemberID: fmt.Sprintf("m%02d", i), Generation: 3}
			if same {
				s.Topics = names
			} else {
				for _, n := range names {
					if rng.IntN(2) == 0 {
						s.Topics = append(s.Topics, n)
					}
				}
				if len(s.Topics) == 0 {
					s.Topics = names[:1]
				}
			}
			members = append(members, s)
		}
		// A previous, valid assignment: a random owner for some partitions.
		for _, t := range names {
			for p := range parts[t] {
				if rng.IntN(3) == 0 {
					continue
				}
				i := rng.IntN(len(members))
				if members[i].subscribes(t) {
					members[i].Owned = append(members[i].Owned, TopicPartition{t, p})
				}
			}
		}
		ctx := fmt.Sprintf("iteration %d (seed %d)", iter, seed)
		first := CooperativeSticky().Assign(members, parts)
		checkAssignment(t, ctx+" round 1", members, parts, first)
		// No partition goes to a member other than its owner.
		ownerOf := map[TopicPartition]string{}
		for _, m := range members {
			for _, tp := range m.Owned {
				ownerOf[tp] = m.MemberID
			}
		}
		for id, got := range first {
			for _, tp := range got {
				if o, ok := ownerOf[tp]; ok && o != id {
					t.Fatalf("%s: %v moves from %s to %s in one rebalance", ctx, tp, o, id)
				}
			}
		}
		// Sticky: with one subscription, an owner keeps at least what the
		// balanced share allows.
		if same {
			total := 0
			for _, n := range parts {
				total += int(n)
			}
			floor := total / len(members)
			for _, m := range members {
				kept := 0
				for _, tp := range first[m.MemberID] {
					if slices.Contains(m.Owned, tp) {
						kept++
					}
				}
				if kept < min(len(m.Owned), floor) {
					t.Fatalf("%s: %s kept %d of its %d partitions, balanced share %d", ctx, m.MemberID, kept, len(m.Owned), floor)
				}
			}
		}
		// Later rounds: every member owns what the last round gave it,
		// until nothing changes. One subscription needs one more round
		// (KIP-429); different ones may need a few, as partitions that
		// only some members can take move in turn.
		plan := first
		rounds := 1
		for ; rounds < 10; rounds++ {
			for i := range members {
				members[i].Owned = plan[members[i].MemberID]
				members[i].Generation++
			}
			next := CooperativeSticky().Assign(members, parts)
			checkAssignment(t, fmt.Sprintf("%s round %d", ctx, rounds+1), members, parts, next)
			for _, m := range members {
				for _, tp := range next[m.MemberID] {
					for _, o := range members {
						if o.MemberID != m.MemberID && slices.Contains(o.Owned, tp) {
							t.Fatalf("%s round %d: %v moves from %s to %s in one rebalance", ctx, rounds+1, tp, o.MemberID, m.MemberID)
						}
					}
				}
			}
			stable := true
			for _, m := range members {
				stable = stable && slices.Equal(sortedPartitions(next[m.MemberID]), sortedPartitions(plan[m.MemberID]))
			}
			plan = next
			if stable {
				break
			}
		}
		if same && rounds > 2 {
			t.Fatalf("%s: one subscription took %d rounds to settle: %v", ctx, rounds, plan)
		}
		if rounds == 10 {
			t.Fatalf("%s: the assignment did not settle in 10 rounds: %v", ctx, plan)
		}
		assigned := 0
		for _, got := range plan {
			assigned += len(got)
		}
		want := 0
		for tp, n := range parts {
			for _, m := range members {
				if m.subscribes(tp) {
					want += int(n)
					break
				}
			}
		}
		if assigned != want {
			t.Fatalf("%s: settled after %d rounds with %d of %d subscribed partitions assigned: %v", ctx, rounds, assigned, want, plan)
		}
		if same {
			lo, hi := 1<<30, -1
			for _, m := range members {
				lo, hi = min(lo, len(plan[m.MemberID])), max(hi, len(plan[m.MemberID]))
			}
			if hi-lo > 1 {
				t.Fatalf("%s: settled unbalanced (%d to %d): %v", ctx, lo, hi, plan)
			}
		}
	}
}

// checkAssignment: partitions exist, go to subscribers, at most once.
func checkAssignment(t *testing.T, ctx string, members []Subscription, parts map[string]int32, plan map[string][]TopicPartition) {
	t.Helper()
	seen := map[TopicPartition]string{}
	for _, m := range members {
		for _, tp := range plan[m.MemberID] {
			if n, ok := parts[tp.Topic]; !ok || tp.Partition < 0 || tp.Partition >= n {
				t.Fatalf("%s: %s got %v, which does not exist", ctx, m.MemberID, tp)
			}
			if !m.subscribes(tp.Topic) {
				t.Fatalf("%s: %s got %v without subscribing to its topic", ctx, m.MemberID, tp)
			}
			if o, dup := seen[tp]; dup {
				t.Fatalf("%s: %v assigned to %s and %s", ctx, tp, o, m.MemberID)
			}
			seen[tp] = m.MemberID
		}
	}
	for id := range plan {
		if !slices.ContainsFunc(members, func(s Subscription) bool { return s.MemberID == id }) && len(plan[id]) > 0 {
			t.Fatalf("%s: plan for unknown member %s", ctx, id)
		}
	}
}

func TestEagerAssignorsBalance(t *testing.T) {
	members := []Subscription{{MemberID: "a", Topics: []string{"t"}}, {MemberID: "b", Topics: []string{"t"}}, {MemberID: "c", Topics: []string{"t"}}}
	for _, a := range []Assignor{Range(), RoundRobin()} {
		plan := a.Assign(members, map[string]int32{"t": 10})
		checkAssignment(t, a.Name(), members, map[string]int32{"t": 10}, plan)
		n := 0
		for _, m := range members {
			if c := len(plan[m.MemberID]); c < 3 || c > 4 {
				t.Fatalf("%s gave %s %d partitions", a.Name(), m.MemberID, c)
			}
			n += len(plan[m.MemberID])
		}
		if n != 10 || a.Protocol() != Eager {
			t.Fatalf("%s: %d assigned, protocol %v", a.Name(), n, a.Protocol())
		}
	}
	if CooperativeSticky().Protocol() != Cooperative || CooperativeSticky().Name() != "cooperative-sticky" {
		t.Fatal("cooperative-sticky's name or protocol")
	}
}

// FuzzDecodeSubscription: member metadata from the wire never panics the
// decoder or the assignors, and what decodes re-encodes to the same
// subscription.
func FuzzDecodeSubscription(f *testing.F) {
	f.Add(encodeSubscription([]string{"a", "b"}, tps("a", 1, "b", 0), 4))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 1, 'a', 0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 3, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, meta []byte) {
		s, err := decodeSubscription("m", "", meta)
		if err != nil {
			return
		}
		again, err := decodeSubscription("m", "", encodeSubscription(s.Topics, s.Owned, s.Generation))
		if err != nil || !slices.Equal(again.Topics, s.Topics) || !slices.Equal(again.Owned, sortedPartitions(s.Owned)) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", s, again, err)
		}
		parts := map[string]int32{}
		for i, tp := range s.Topics {
			if i < 8 {
				parts[tp] = int32(1 + len(tp)%5)
			}
		}
		other := Subscription{MemberID: "n", Topics: s.Topics, Owned: tps("x", 0), Generation: s.Generation}
		for _, a := range []Assignor{Range(), RoundRobin(), CooperativeSticky()} {
			members := []Subscription{s, other}
			checkAssignment(t, a.Name(), members, parts, a.Assign(members, parts))
		}
	})
}

// FuzzDecodeAssignment: an assignment from the wire never panics, and what
// decodes re-encodes to the same partitions.
func FuzzDecodeAssignment(f *testing.F) {
	f.Add(encodeAssignment(tps("a", 0, "a", 2, "b", 1)))
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 0, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeAssignment(b)
		if err != nil {
			return
		}
		again, err := decodeAssignment(encodeAssignment(got))
		if err != nil || !slices.Equal(again, sortedPartitions(got)) {
			t.Fatalf("re-encoded %v decodes to %v, %v", got, again, err)
		}
	})
}

// TestCooperativeStickyKeepsBalancedShare is the case seed
// 1796184116860759900 of TestCooperativeStickyProperties found: balancing
// several moves at a time from one member took m01 below its balanced
// share of 4 while m03 still held 6, and then refilled it with a partition
// that had to move from m03, so m01 kept 3 of the 6 it owned.
func TestCooperativeStickyKeepsBalancedShare(t *testing.T) {
	all := []string{"t0", "t1", "t2"}
	parts := map[string]int32{"t0": 8, "t1": 7, "t2": 5}
	tp := func(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }
	members := []Subscription{
		{MemberID: "m00", Generation: 3, Topics: all},
		{MemberID: "m01", Generation: 3, Topics: all, Owned: []TopicPartition{tp("t1", 0), tp("t1", 2), tp("t1", 5), tp("t1", 6), tp("t2", 1), tp("t2", 3)}},
		{MemberID: "m02", Generation: 3, Topics: all},
		{MemberID: "m03", Generation: 3, Topics: all, Owned: []TopicPartition{tp("t0", 4), tp("t0", 5), tp("t0", 6), tp("t0", 7), tp("t1", 1), tp("t2", 2)}},
		{MemberID: "m04", Generation: 3, Topics: all, Owned: []TopicPartition{tp("t0", 0), tp("t0", 1), tp("t0", 2), tp("t0", 3), tp("t1", 3)}},
	}
	plan := stickyPlan(members, parts)
	checkAssignment(t, "plan", members, parts, plan)
	for _, m := range members {
		kept := 0
		for _, p := range plan[m.MemberID] {
			if slices.Contains(m.Owned, p) {
				kept++
			}
		}
		if want := min(len(m.Owned), 4); kept < want {
			t.Errorf("%s kept %d of its %d partitions, balanced share 4: plan %v", m.MemberID, kept, len(m.Owned), plan)
		}
		if n := len(plan[m.MemberID]); n != 4 {
			t.Errorf("%s holds %d partitions, want 4: plan %v", m.MemberID, n, plan)
		}
	}
}
