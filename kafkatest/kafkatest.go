// Package kafkatest runs a Kafka endpoint for Go tests, the way franz-go's
// kfake is used: c := kafkatest.New(t) gives a running Folio broker on a
// temporary data directory and its address, closed by t.Cleanup. Unlike a
// fake, it is the real broker: records are persisted in Kafka's segment
// format, idempotence, consumer groups and committed offsets are Folio's
// own, and it survives malformed frames (a bad frame closes only its
// connection).
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/transport"
)

// Cluster is a running endpoint. Its Broker is the data directory it
// serves, for tests that look behind the wire.
type Cluster struct {
	Broker *folio.Broker
	addr   string
	server *transport.Server
	served chan error
}

// Options configure New. Zero fields take the defaults stated on them.
type Options struct {
	// Dir is the data directory. Default: t.TempDir().
	Dir string
	// Partitions is the partition count of topics clients create by
	// naming them. Default 1.
	Partitions int32
	// Topics are created before New returns, each with Partitions
	// partitions (or 1).
	Topics []string
	// Server are the transport options (Logger, limits, ...); Advertise
	// and AutoCreatePartitions are set by New.
	Server transport.Options
}

// New starts a Cluster on 127.0.0.1 with an OS-chosen port and stops it
// (server, then Broker) in t.Cleanup. opts nil means defaults; Dir
// defaults to t.TempDir().
func New(t testing.TB, opts *Options) *Cluster {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	c, err := Start(o.Dir, &o)
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("kafkatest: %v", err)
		}
	})
	return c
}

// Start is New outside a test: it serves the data directory dir (opts.Dir
// is ignored) until Close.
func Start(dir string, opts *Options) (*Cluster, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	for _, name := range o.Topics {
		if _, err := b.CreateTopic(name, folio.TopicConfig{Partitions: o.Partitions}); err != nil && !errors.Is(err, folio.ErrTopicExists) {
			b.Close()
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Close()
		return nil, err
	}
	so := o.Server
	so.AutoCreatePartitions = o.Partitions
	so.Advertise = l.Addr().String()
	s, err := transport.NewServer(b, &so)
	if err != nil {
		l.Close()
		b.Close()
		return nil, err
	}
	c := &Cluster{Broker: b, addr: l.Addr().String(), server: s, served: make(chan error, 1)}
	go func() { c.served <- s.Serve(context.Background(), l) }()
	return c, nil
}

// Close stops the server (requests in flight get 30 s to finish) and
// closes the Broker. It is for Start's clusters; New's close themselves.
func (c *Cluster) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errsOut []error
	if err := c.server.Shutdown(ctx); err != nil {
		errsOut = append(errsOut, fmt.Errorf("shutdown: %w", err))
	}
	if err := <-c.served; !errors.Is(err, transport.ErrServerClosed) {
		errsOut = append(errsOut, fmt.Errorf("serve: %w", err))
	}
	c.served <- transport.ErrServerClosed // a second Close sees the same
	if err := c.Broker.Close(); err != nil && !errors.Is(err, folio.ErrClosed) {
		errsOut = append(errsOut, fmt.Errorf("closing the broker: %w", err))
	}
	return errors.Join(errsOut...)
}

// Addr returns the host:port to give a Kafka client as its seed broker.
func (c *Cluster) Addr() string { return c.addr }

// ListenAddrs returns the seed brokers, as kfake's method of that name.
func (c *Cluster) ListenAddrs() []string { return []string{c.addr} }
