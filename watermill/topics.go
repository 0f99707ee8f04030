package foliowatermill

import (
	"errors"
	"fmt"
	"sync"

	"github.com/foliolog/folio"
)

// topics makes sure topics exist, remembering the ones it has seen.
type topics struct {
	b       *folio.Broker
	create  bool
	config  folio.TopicConfig
	knownMu sync.Mutex
	known   map[string]struct{}
}

func newTopics(b *folio.Broker, disableCreation bool, cfg folio.TopicConfig) *topics {
	return &topics{b: b, create: !disableCreation, config: cfg, known: map[string]struct{}{}}
}

// ensure returns the topic's description, creating the topic first if it
// is missing and creation is allowed.
func (t *topics) ensure(name string) (folio.TopicInfo, error) {
	info, err := t.b.DescribeTopic(name)
	if err == nil || !errors.Is(err, folio.ErrUnknownTopic) || !t.create {
		if err != nil {
			return info, fmt.Errorf("foliowatermill: topic %q: %w", name, err)
		}
		return info, nil
	}
	info, err = t.b.CreateTopic(name, t.config)
	if errors.Is(err, folio.ErrTopicExists) { // created meanwhile by another caller
		info, err = t.b.DescribeTopic(name)
	}
	if err != nil {
		return info, fmt.Errorf("foliowatermill: create topic %q: %w", name, err)
	}
	return info, nil
}

// ensureKnown is ensure for the publish path: it skips the broker once a
// topic has been seen.
func (t *topics) ensureKnown(name string) error {
	t.knownMu.Lock()
	_, ok := t.known[name]
	t.knownMu.Unlock()
	if ok {
		return nil
	}
	if _, err := t.ensure(name); err != nil {
		return err
	}
	t.knownMu.Lock()
	t.known[name] = struct{}{}
	t.knownMu.Unlock()
	return nil
}

// forget drops a topic from the known ones (after it was deleted).
func (t *topics) forget(name string) {
	t.knownMu.Lock()
	delete(t.known, name)
	t.knownMu.Unlock()
}
