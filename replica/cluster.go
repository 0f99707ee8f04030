package replica

import (
	"fmt"
	"slices"
	"sort"

	"github.com/foliolog/folio/topic"
)

// TopicRecord is a replicated topic as the cluster's metadata holds it:
// what every broker hosting one of its replicas creates locally, under
// the same id, so that clients see one topic whichever broker they ask.
type TopicRecord struct {
	Name     string
	ID       topic.ID
	Internal bool
	// Config is the topic's configuration, defaults spelled out;
	// Partitions is its partition count.
	Config topic.Config
}

// CreateTopic adds a replicated topic and the state of each of its
// partitions in one change: partition p is assigned the replicas
// assignment[p] (preferred leader first), all in the ISR under their
// registered incarnations, led by the first in epoch 0. It fails if a
// topic of that name exists, or the assignment does not give every
// partition at least one replica.
func (m *Mem) CreateTopic(rec TopicRecord, assignment [][]int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkNewTopicLocked(rec, assignment); err != nil {
		return err
	}
	m.assignLocked(rec.Name, 0, assignment)
	m.topics[rec.Name] = rec
	m.notifyLocked()
	return nil
}

// AdoptTopic adds a replicated topic whose records one broker already
// holds, in one change: a topic that broker kept alone before it joined a
// cluster (a single broker's __consumer_offsets). Partition p is assigned
// the replicas assignment[p], whose first must be holder's id; holder leads
// it in epoch 0 and is its whole ISR. The other replicas start empty,
// outside the ISR, and join it once they have copied the leader's log, as
// replicas added by a Kafka reassignment do: until then no election can
// pass the records to a replica that lacks them. It fails as CreateTopic
// does.
func (m *Mem) AdoptTopic(rec TopicRecord, assignment [][]int32, holder Member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkNewTopicLocked(rec, assignment); err != nil {
		return err
	}
	for i, rs := range assignment {
		if rs[0] != holder.ID {
			return fmt.Errorf("replica: topic %q partition %d: replicas %v do not start with the holder %d", rec.Name, i, rs, holder.ID)
		}
	}
	for i, rs := range assignment {
		m.parts[TopicPartition{rec.Name, int32(i)}] = State{Replicas: slices.Clone(rs), Leader: holder.ID, ISR: []Member{holder}}
	}
	m.topics[rec.Name] = rec
	m.notifyLocked()
	return nil
}

// checkNewTopicLocked refuses a topic whose name is taken, or an
// assignment that does not give each of its partitions replicas.
func (m *Mem) checkNewTopicLocked(rec TopicRecord, assignment [][]int32) error {
	if _, ok := m.topics[rec.Name]; ok {
		return fmt.Errorf("%w: %q", topic.ErrExists, rec.Name)
	}
	if len(assignment) != int(rec.Config.Partitions) {
		return fmt.Errorf("replica: topic %q: %d partitions, %d assigned", rec.Name, rec.Config.Partitions, len(assignment))
	}
	return checkAssignment(rec.Name, 0, assignment)
}

// checkAssignment refuses an assignment that leaves a partition from
// first on without replicas.
func checkAssignment(name string, first int32, assignment [][]int32) error {
	for i, rs := range assignment {
		if len(rs) == 0 {
			return fmt.Errorf("replica: topic %q partition %d has no replicas", name, first+int32(i))
		}
	}
	return nil
}

// assignLocked creates the state of partitions first, first+1, ... of
// topic name from assignment: its replicas (preferred leader first), all
// in the ISR under their registered incarnations, led by the first in
// epoch 0.
func (m *Mem) assignLocked(name string, first int32, assignment [][]int32) {
	for i, rs := range assignment {
		s := State{Replicas: slices.Clone(rs), Leader: rs[0]}
		for _, r := range rs {
			s.ISR = append(s.ISR, Member{ID: r, Incarnation: m.incarnations[r]})
		}
		m.parts[TopicPartition{name, first + int32(i)}] = s
	}
}

// AddPartitions grows the replicated topic name by len(assignment)
// partitions, numbered from its current count, each assigned and led as
// CreateTopic assigns them, in one change. It fails if there is no such
// topic, if it would exceed topic.MaxPartitions, or if a new partition
// has no replicas; it returns the topic as it now is.
func (m *Mem) AddPartitions(name string, assignment [][]int32) (TopicRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.topics[name]
	if !ok {
		return TopicRecord{}, fmt.Errorf("%w: %q", topic.ErrNotFound, name)
	}
	cur := rec.Config.Partitions
	if len(assignment) == 0 || int(cur)+len(assignment) > topic.MaxPartitions {
		return rec, fmt.Errorf("%w: topic %q has %d partitions; adding %d, want more, at most %d in all",
			topic.ErrInvalidPartitions, name, cur, len(assignment), topic.MaxPartitions)
	}
	if err := checkAssignment(name, cur, assignment); err != nil {
		return rec, err
	}
	m.assignLocked(name, cur, assignment)
	rec.Config.Partitions = cur + int32(len(assignment))
	m.topics[name] = rec
	m.notifyLocked()
	return rec, nil
}

// DeleteTopic removes the replicated topic name and the state of its
// partitions in one change; it reports whether there was one. The brokers
// hosting its replicas drop theirs when they see the change: a leader
// resigns (its held appends fail, indeterminate), a follower stops.
func (m *Mem) DeleteTopic(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.topics[name]
	if !ok {
		return false
	}
	for p := range rec.Config.Partitions {
		delete(m.parts, TopicPartition{name, p})
	}
	delete(m.topics, name)
	m.notifyLocked()
	return true
}

// Topics returns the replicated topics, by name.
func (m *Mem) Topics() []TopicRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicRecord, 0, len(m.topics))
	for _, r := range m.topics {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic returns one replicated topic, and false if there is none of that
// name.
func (m *Mem) Topic(name string) (TopicRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.topics[name]
	return r, ok
}

// Changes returns the metadata's version, which rises with every change
// (a topic created, an ISR altered, a leader elected or fenced, a broker
// registered), and a channel closed at the next change: a broker waits on
// it to learn of elections without polling.
func (m *Mem) Changes() (version int64, next <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, m.changed
}

func (m *Mem) notifyLocked() {
	m.version++
	close(m.changed)
	m.changed = make(chan struct{})
}

// SetUnclean sets whether Elect may choose a replica outside the ISR
// (unclean.leader.election.enable); the Unclean field, under the lock.
func (m *Mem) SetUnclean(unclean bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Unclean = unclean
}

// AllocateProducerID returns a producer id unique among the brokers
// sharing this metadata, and at least floor: each broker passes the next
// id of its own durable counter, so the id is also above every id it
// handed out before a restart. (Kafka's controller hands out blocks of
// producer ids, KIP-730; without it, two brokers counting each on their
// own give two producers one id, and after a failover the second's
// records are taken for the first's duplicates.)
func (m *Mem) AllocateProducerID(floor int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := max(m.nextProducerID, floor)
	m.nextProducerID = id + 1
	return id
}

// AlterTopicConfig replaces the configuration of the replicated topic
// name, as a broker's AlterTopicConfig changed it; the partition count
// is kept. It reports whether the topic exists. Of the configuration the
// metadata acts on unclean.leader.election.enable only.
func (m *Mem) AlterTopicConfig(name string, cfg topic.Config) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.topics[name]
	if !ok {
		return false
	}
	cfg.Partitions = rec.Config.Partitions
	rec.Config = cfg
	m.topics[name] = rec
	m.notifyLocked()
	return true
}
