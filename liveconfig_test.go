package folio

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterEveryTopicConfigLive alters, with kadm over the wire, every
// topic config Folio acts on while the topic is open and being written,
// and checks each one three ways: DescribeConfigs reports the new value as
// DYNAMIC_TOPIC_CONFIG, the open partition behaves by it at once (the
// flush policy's fsyncs, a record above the open-time max.message.bytes,
// log-append time, the stored codec, rolls by size and by age, the
// sendfile read path, compaction and its lag), and after a restart the
// configuration and its behaviour are still there.
func TestAlterEveryTopicConfigLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	clk := newTestClock(time.Now())
	b := openT(t, dir, &Options{Now: clk.Now})
	cl, adm := liveClient(t, serveT(t, b))

	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"max.message.bytes": ptrTo("2000"), "flush": ptrTo("none"),
	}, "t"); err != nil {
		t.Fatal(err)
	}
	alter := func(topicName string, cs ...kadm.AlterConfig) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, cs, topicName)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("altering %s %v: %v %s", r.Name, cs, r.Err, r.ErrMessage)
			}
		}
	}
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Name: k, Value: ptrTo(v)} }
	produce := func(r *kgo.Record) error {
		t.Helper()
		return cl.ProduceSync(ctx, r).FirstErr()
	}
	mustProduce := func(r *kgo.Record) {
		t.Helper()
		if err := produce(r); err != nil {
			t.Fatal(err)
		}
	}
	p, err := b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	stats := func() (syncs, rolls, durable, end int64) {
		st := p.Log().Stats()
		return st.Syncs, st.Rolls, p.Log().DurableEndOffset(), p.Log().LogEndOffset()
	}

	// flush: none fsyncs nothing per record; sync one fsync per
	// acknowledged record, and the durable end is the log end.
	s0, _, _, _ := stats()
	for range 5 {
		mustProduce(&kgo.Record{Topic: "t", Value: []byte("none")})
	}
	s1, _, dur, end := stats()
	if s1 != s0 || dur == end {
		t.Fatalf("flush=none: %d fsyncs for 5 records, durable end %d of %d", s1-s0, dur, end)
	}
	alter("t", set("flush", "sync"))
	for i := range 5 {
		mustProduce(&kgo.Record{Topic: "t", Value: []byte("sync")})
		if _, _, dur, end := stats(); dur != end {
			t.Fatalf("flush=sync: record %d acknowledged with the durable end %d below the log end %d", i, dur, end)
		}
	}
	if s2, _, _, _ := stats(); s2-s1 < 5 {
		t.Fatalf("flush=sync: %d fsyncs for 5 acknowledged records", s2-s1)
	}

	// max.message.bytes above the 2000 the log opened with.
	big := make([]byte, 100_000)
	rand.Read(big) // incompressible
	if err := produce(&kgo.Record{Topic: "t", Value: big[:5000]}); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a 5000-byte record at max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}
	alter("t", set("max.message.bytes", "200000"))
	mustProduce(&kgo.Record{Topic: "t", Value: big})

	// message.timestamp.type: the producer's time, then the broker's.
	created := time.UnixMilli(1_000_000)
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("ct"), Timestamp: created})
	alter("t", set("message.timestamp.type", "LogAppendTime"))
	clk.Advance(time.Second)
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("lat"), Timestamp: created})
	recs := fetchAllKgo(t, ctx, cl, "t", p.Log().HighWatermark())
	if got := recs[len(recs)-2].Timestamp; !got.Equal(created) {
		t.Fatalf("CreateTime record stamped %v, want the producer's %v", got, created)
	}
	if got, want := recs[len(recs)-1].Timestamp, clk.Now().Truncate(time.Millisecond); !got.Equal(want) {
		t.Fatalf("LogAppendTime record stamped %v, want the broker's %v", got, want)
	}

	// compression.type: the next batch is stored gzip'd.
	lastCodec := func() record.Codec {
		t.Helper()
		v, err := p.Log().Read(p.Log().LogEndOffset()-1, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		bs, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return record.Batch(bs).Codec()
	}
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("plain")})
	if c := lastCodec(); c != record.CodecNone {
		t.Fatalf("compression.type=producer stored %v, want the producer's none", c)
	}
	alter("t", set("compression.type", "gzip"))
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("gzip")})
	if c := lastCodec(); c != record.CodecGzip {
		t.Fatalf("compression.type=gzip stored %v", c)
	}

	// segment.ms: a roll once the active segment is older, by the clock.
	alter("t", set("segment.ms", "60000"))
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("age")})
	_, r0, _, _ := stats()
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("age")})
	if _, r, _, _ := stats(); r != r0 {
		t.Fatalf("segment.ms=60000: rolled %d times within a minute", r-r0)
	}
	clk.Advance(2 * time.Minute)
	mustProduce(&kgo.Record{Topic: "t", Value: []byte("age")})
	if _, r, _, _ := stats(); r != r0+1 {
		t.Fatalf("segment.ms=60000: rolled %d times after two minutes, want 1", r-r0)
	}

	// read.path: mmap serves fetches without sendfile; after the change
	// and a roll, the new segment's bytes go out by sendfile.
	sendfiled := func() int64 {
		t.Helper()
		before := readpath.ReadCounters().SendfileBytes
		fetchAllKgo(t, ctx, cl, "t", p.Log().HighWatermark())
		return readpath.ReadCounters().SendfileBytes - before
	}
	if n := sendfiled(); n != 0 {
		t.Fatalf("read.path=mmap: %d bytes sent by sendfile", n)
	}
	// segment.bytes: rolls by size from the next append.
	// index.interval.bytes: Kafka's 0, an entry at every batch of the
	// segments created from now on (checked after the restart below).
	endAtAlter := p.Log().LogEndOffset()
	alter("t", set("read.path", "sendfile"), set("segment.bytes", "4096"), set("index.interval.bytes", "0"))
	_, r1, _, _ := stats()
	for range 10 {
		mustProduce(&kgo.Record{Topic: "t", Value: big[:1000]})
	}
	if _, r, _, _ := stats(); r-r1 < 2 {
		t.Fatalf("segment.bytes=4096: %d rolls over 10 KB", r-r1)
	}
	if n := sendfiled(); n == 0 {
		t.Fatal("read.path=sendfile: no byte of the segments opened since went out by sendfile")
	}

	// cleanup.policy=compact on a topic that deleted, then the lag.
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"segment.bytes": ptrTo("1024")}, "c"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		mustProduce(&kgo.Record{Topic: "c", Key: []byte{'k', byte('0' + i%4)}, Value: big[:100]})
	}
	cp, err := b.Partition("c", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compact(ctx, "c", 0); !errors.Is(err, log.ErrNotCompacted) {
		t.Fatalf("Compact with cleanup.policy=delete: %v, want ErrNotCompacted", err)
	}
	alter("c", set("cleanup.policy", "compact"), set("min.compaction.lag.ms", "3600000"),
		set("min.cleanable.dirty.ratio", "0.9"), set("delete.retention.ms", "1000"))
	if err := produce(&kgo.Record{Topic: "c", Value: []byte("keyless")}); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("a keyless record after cleanup.policy=compact: %v, want CORRUPT_MESSAGE (a null key for a compacted topic)", err)
	}
	if _, err := b.Compact(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	if n := len(fetchAllKgo(t, ctx, cl, "c", cp.Log().HighWatermark())); n != 40 {
		t.Fatalf("min.compaction.lag.ms=1h over records of now: %d of 40 records left, want all", n)
	}
	alter("c", set("min.compaction.lag.ms", "0"))
	if _, err := b.Compact(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	left := fetchAllKgo(t, ctx, cl, "c", cp.Log().HighWatermark())
	if len(left) >= 40 || cp.Log().CompactionStats().RecordsRemoved == 0 {
		t.Fatalf("cleanup.policy=compact: %d of 40 records left after Compact", len(left))
	}

	want := map[string]map[string]string{
		"t": {
			"flush": "sync", "max.message.bytes": "200000", "message.timestamp.type": "LogAppendTime",
			"compression.type": "gzip", "segment.ms": "60000", "read.path": "sendfile", "segment.bytes": "4096",
			"index.interval.bytes": "0",
		},
		"c": {
			"cleanup.policy": "compact", "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.9",
			"delete.retention.ms": "1000", "segment.bytes": "1024",
		},
	}
	checkDescribed := func(adm *kadm.Client) {
		t.Helper()
		for name, kvs := range want {
			rcs, err := adm.DescribeTopicConfigs(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := rcs.On(name, nil)
			if err != nil || rc.Err != nil {
				t.Fatal(err, rc.Err)
			}
			got := map[string]kadm.Config{}
			for _, c := range rc.Configs {
				got[c.Key] = c
			}
			for k, v := range kvs {
				src := kmsg.ConfigSourceDynamicTopicConfig
				if k == "min.compaction.lag.ms" || k == "flush" {
					// Set to the default (a value the catalog cannot
					// tell from an unset one).
					src = kmsg.ConfigSourceDefaultConfig
				}
				if c := got[k]; c.MaybeValue() != v || c.Source != src {
					t.Errorf("%s %s: %q source %v, want %q %v", name, k, c.MaybeValue(), c.Source, v, src)
				}
			}
		}
	}
	checkDescribed(adm)

	// A restart keeps every change, and the partitions open with it.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The segments created after index.interval.bytes=0 went live index
	// every batch after their first (the Close trimmed the indexes to
	// their entries); under the default 4096 a 4 KiB segment has none.
	des, err := os.ReadDir(filepath.Join(dir, "t-0"))
	if err != nil {
		t.Fatal(err)
	}
	indexed := 0
	for _, de := range des {
		base, suffix, ok := segment.ParseFileName(de.Name())
		if !ok || suffix != segment.IndexSuffix || base <= endAtAlter {
			continue
		}
		if fi, err := de.Info(); err == nil && fi.Size() > 0 {
			indexed++
		}
	}
	if indexed < 2 {
		t.Errorf("index.interval.bytes=0: %d segments created after the change have offset-index entries, want every one of two batches or more", indexed)
	}
	b = openT(t, dir, &Options{Now: clk.Now})
	cl, adm = liveClient(t, serveT(t, b))
	checkDescribed(adm)
	p, err = b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	mustProduce(&kgo.Record{Topic: "t", Value: big[:3000], Timestamp: created}) // under segment.bytes=4096, which caps a batch
	recs = fetchAllKgo(t, ctx, cl, "t", p.Log().HighWatermark())
	if got, want := recs[len(recs)-1].Timestamp, clk.Now().Truncate(time.Millisecond); !got.Equal(want) {
		t.Fatalf("after the restart: stamped %v, want the broker's %v", got, want)
	}
	if c := lastCodec(); c != record.CodecGzip {
		t.Fatalf("after the restart: stored %v, want gzip", c)
	}
	if err := produce(&kgo.Record{Topic: "c", Value: []byte("keyless")}); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("after the restart, a keyless record to the compacted topic: %v", err)
	}
}

// liveClient returns a kgo client for addr that sends records as they are
// (no compression, one partition per record as given) and its admin.
func liveClient(t *testing.T, addr string) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// fetchAllKgo reads partition 0 of topicName from the start up to hw with
// a fresh consumer on cl's brokers.
func fetchAllKgo(t *testing.T, ctx context.Context, cl *kgo.Client, topicName string, hw int64) []*kgo.Record {
	t.Helper()
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topicName: {0: kgo.NewOffset().AtStart()},
	}), kgo.FetchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < hw-1 {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetching %s up to %d: %v after %d records", topicName, hw, err, len(out))
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetching %s: %v", topicName, errs)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// TestProducerFollowsCompressionChange: a Producer made before a topic's
// compression.type changes builds its next batches in the new codec.
func TestProducerFollowsCompressionChange(t *testing.T) {
	ctx := context.Background()
	b := openT(t, t.TempDir(), nil)
	if _, err := b.CreateTopic("t", TopicConfig{Partitions: 1, Compression: CompressionNone}); err != nil {
		t.Fatal(err)
	}
	pr, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	p, err := b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() record.Codec {
		t.Helper()
		if _, _, err := pr.Produce(ctx, &Record{Topic: "t", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		v, err := p.Log().Read(p.Log().LogEndOffset()-1, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		bs, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return record.Batch(bs).Codec()
	}
	if c := stored(); c != record.CodecNone {
		t.Fatalf("compression none: stored %v", c)
	}
	if _, err := b.AlterTopicConfig("t", false, func(c *TopicConfig) error { c.Compression = CompressionGzip; return nil }); err != nil {
		t.Fatal(err)
	}
	if c := stored(); c != record.CodecGzip {
		t.Fatalf("after compression.type=gzip, the Producer's batch is stored %v", c)
	}
}
