package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The wire-produce suite compares a Kafka client producing over loopback
// to folio serve's server (the fetch suite's child process) with the
// in-process Producer on the same workload, in the same run: 100-byte
// values, unkeyed, default batching, acks=all, idempotent, per flush
// policy.

func wireProduceRecords(cfg *config) int64 {
	n := int64(500_000)
	switch cfg.Mode {
	case modeQuick:
		n = 20_000
	case modeFull:
		n = 2_000_000
	}
	return cfg.scaled(n, 1000)
}

var wireProducePolicies = []struct {
	name   string
	policy folio.TopicConfig
}{
	{"none", folio.TopicConfig{Partitions: 4, Flush: folio.FlushNone}},
	{"sync", folio.TopicConfig{Partitions: 4, Flush: folio.FlushSync}},
}

func runWireProduce(ctx context.Context, e *env) ([]*table, error) {
	n := wireProduceRecords(e.cfg)
	t := &table{
		Suite:   suiteWireProduce,
		Title:   "produce: a kgo client over loopback to folio serve (child process), against the in-process Producer",
		Params:  []string{"producer", "flush policy", "records"},
		Columns: []column{{"throughput", "records/s"}, {"of in-process", "ratio"}},
	}
	// The served directory holds one topic per policy, created now.
	dir := filepath.Join(e.dir, "wire")
	b, err := folio.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	for _, pc := range wireProducePolicies {
		if _, err := b.CreateTopic("w-"+pc.name, pc.policy); err != nil {
			b.Close()
			return nil, err
		}
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, serverFolio, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	value := make([]byte, 100)
	var kf *serverProc // the kfake child of the policy being measured
	defer func() {
		if kf != nil {
			kf.stop()
		}
	}()
	for _, pc := range wireProducePolicies {
		// franz-go's kfake on the same workload, as a reference: its own
		// child, persisting to a directory of its own (the sync policy
		// with kfake.SyncWrites, an fsync per batch).
		kind := serverKfake
		if pc.policy.Flush == folio.FlushSync {
			kind = serverKfakeSync
		}
		if kf != nil {
			kf.stop()
		}
		kf, err = startServer(ctx, kind, filepath.Join(e.dir, "kfake-"+pc.name))
		if err != nil {
			kf = nil
			return []*table{t}, err
		}
		var wire, local, fake []float64
		for r := range e.cfg.Runs {
			if err := ctx.Err(); err != nil {
				return []*table{t}, err
			}
			e.step(suiteWireProduce, "kgo, flush %s, run %d/%d", pc.name, r+1, e.cfg.Runs)
			rate, err := kgoProduce(ctx, srv.addr, "w-"+pc.name, n, value)
			if err != nil {
				return []*table{t}, fmt.Errorf("kgo produce, flush %s: %w", pc.name, err)
			}
			wire = append(wire, rate)
			e.step(suiteWireProduce, "in-process, flush %s, run %d/%d", pc.name, r+1, e.cfg.Runs)
			rate, err = localProduce(ctx, filepath.Join(e.dir, fmt.Sprintf("local-%s-%d", pc.name, r)), pc.policy, n, value)
			if err != nil {
				return []*table{t}, fmt.Errorf("in-process produce, flush %s: %w", pc.name, err)
			}
			local = append(local, rate)
			e.step(suiteWireProduce, "kfake, flush %s, run %d/%d", pc.name, r+1, e.cfg.Runs)
			rate, err = kgoProduce(ctx, kf.addr, "w-"+pc.name, n, value)
			if err != nil {
				return []*table{t}, fmt.Errorf("kgo produce to kfake, flush %s: %w", pc.name, err)
			}
			fake = append(fake, rate)
		}
		med := summarize(local).Median
		ratio := func(v []float64) []float64 {
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = x / med
			}
			return out
		}
		rows := []struct {
			name string
			v    []float64
		}{{"kgo over loopback", wire}, {"in-process Producer", local}, {"kgo to kfake (reference)", fake}}
		for _, row := range rows {
			if err := t.add([]string{row.name, pc.name, strconv.FormatInt(n, 10)}, "page cache", [][]float64{row.v, ratio(row.v)}); err != nil {
				return []*table{t}, err
			}
		}
	}
	t.Notes = []string{
		"Both produce 100-byte unkeyed values to a 4-partition topic with their default batching, idempotently, acks=all (kgo.AllISRAcks), and wait for every acknowledgement; the rate is records over the time from the first produce to the last acknowledgement.",
		"\"of in-process\": each run's rate over the in-process Producer's median for the same policy. The kgo client and the bench share this process; the server is the child.",
		"kfake (github.com/twmb/franz-go/pkg/kfake, franz-go's fake cluster) runs as a child of its own on the same workload, one broker, the topic auto-created with 4 partitions, persisting to its own directory (kfake.DataDir: page cache only, as Kafka's default flush); under the sync policy with kfake.SyncWrites, an fsync per batch. It is a test fake, not a broker: the row places the figures, it is no target.",
	}
	return []*table{t}, nil
}

func kgoProduce(ctx context.Context, addr, topic string, n int64, value []byte) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.AllowAutoTopicCreation()) // kfake creates the topic; folio's child has it already
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return 0, err
	}
	var failed atomic.Value
	start := time.Now()
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return 0, err
	}
	return perSecond(n, took), nil
}

func localProduce(ctx context.Context, dir string, cfg folio.TopicConfig, n int64, value []byte) (float64, error) {
	b, err := folio.Open(dir, nil)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if _, err := b.CreateTopic("w", cfg); err != nil {
		return 0, err
	}
	p, err := b.NewProducer(nil)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var failed atomic.Value
	start := time.Now()
	for range n {
		p.ProduceAsync(ctx, &folio.Record{Topic: "w", Value: value}, func(_ *folio.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return 0, errors.Join(err)
	}
	return perSecond(n, took), nil
}
