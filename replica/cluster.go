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
	if _, ok := m.topics[rec.Name]; ok {
		return fmt.Errorf("%w: %q", topic.ErrExists, rec.Name)
	}
	if len(assignment) != int(rec.Config.Partitions) {
		return fmt.Errorf("replica: topic %q: %d partitions, %d assigned", rec.Name, rec.Config.Partitions, len(assignment))
	}
	for p, rs := range assignment {
		if len(rs) == 0 {
			return fmt.Errorf("replica: topic %q partition %d has no replicas", rec.Name, p)
		}
	}
	for p, rs := range assignment {
		s := State{Replicas: slices.Clone(rs), Leader: rs[0]}
		for _, r := range rs {
			s.ISR = append(s.ISR, Member{ID: r, Incarnation: m.incarnations[r]})
		}
		m.parts[TopicPartition{rec.Name, int32(p)}] = s
	}
	m.topics[rec.Name] = rec
	m.notifyLocked()
	return nil
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
