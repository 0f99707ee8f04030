package transport

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterTopicConfigs alters a topic's configs over the wire with kadm
// (IncrementalAlterConfigs and AlterConfigs): DescribeConfigs shows the new
// value as DYNAMIC_TOPIC_CONFIG, the open partition applies it (a record
// above the new max.message.bytes is MESSAGE_TOO_LARGE), validate_only
// changes nothing, and each refused resource carries its own code.
func TestAlterTopicConfigs(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx := testCtx(t)
	cl := newClient(t, ts.addr)
	adm := kadm.NewClient(cl)
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if v := advertised[kmsg.IncrementalAlterConfigs.Int16()]; v != [2]int16{0, 1} {
		t.Errorf("ApiVersions advertises IncrementalAlterConfigs %v, want 0-1", v)
	}
	if v := advertised[kmsg.AlterConfigs.Int16()]; v != [2]int16{0, 2} {
		t.Errorf("ApiVersions advertises AlterConfigs %v, want 0-2", v)
	}
	for _, n := range []string{"a", "b"} {
		if res, err := adm.CreateTopic(ctx, 1, -1, nil, n); err != nil || res.Err != nil {
			t.Fatalf("CreateTopic %s: %v, %v", n, err, res.Err)
		}
	}
	big := make([]byte, 5000)
	rand.Read(big) // incompressible: kgo compresses batches
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: big}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	describe := func(name string) map[string]kadm.Config {
		t.Helper()
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
		return got
	}
	check := func(rs kadm.AlterConfigsResponses, err error, want map[string]error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if w := want[r.Name]; (w == nil) != (r.Err == nil) || (w != nil && !errors.Is(r.Err, w)) {
				t.Errorf("%s: %v (%s), want %v", r.Name, r.Err, r.ErrMessage, w)
			}
		}
	}

	// validate_only: accepted, nothing changes.
	rs, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptr("1000")}}, "a")
	check(rs, err, nil)
	if c := describe("a")["max.message.bytes"]; c.MaybeValue() == "1000" {
		t.Fatal("validate_only changed max.message.bytes")
	}

	// SET a live key and an accepted one; an unknown key refuses its resource
	// alone; a key that cannot change live is INVALID_CONFIG.
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "max.message.bytes", Value: ptr("1000")},
		{Name: "retention.ms", Value: ptr("3600000")},
		{Name: "min.insync.replicas", Value: ptr("2")},
	}, "a", "missing")
	check(rs, err, map[string]error{"missing": kerr.UnknownTopicOrPartition})
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "no.such.key", Value: ptr("1")}}, "b")
	check(rs, err, map[string]error{"b": kerr.InvalidConfig})
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: ptr("bogus")}}, "b")
	check(rs, err, map[string]error{"b": kerr.InvalidConfig})
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: ptr("1")}}, "b")
	check(rs, err, map[string]error{"b": kerr.InvalidConfig})
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: ptr("delete")}}, "b")
	check(rs, err, map[string]error{"b": kerr.InvalidConfig}) // leaves no policy

	got := describe("a")
	for k, v := range map[string]string{"max.message.bytes": "1000", "retention.ms": "3600000"} {
		if c := got[k]; c.MaybeValue() != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s after the alter: %q source %v, want %q DYNAMIC_TOPIC_CONFIG", k, c.MaybeValue(), c.Source, v)
		}
	}
	if c := got["min.insync.replicas"]; c.MaybeValue() != "1" {
		t.Errorf("min.insync.replicas (accepted, not acted on) reported %q, want Kafka's default 1", c.MaybeValue())
	}
	if c := describe("b")["cleanup.policy"]; c.MaybeValue() != "delete" {
		t.Errorf("a refused alter changed b's cleanup.policy to %q", c.MaybeValue())
	}
	// cleanup.policy is a list: APPEND and SUBTRACT edit it, live.
	for _, step := range []struct {
		op        kadm.IncrementalOp
		value     string
		want      string
		compacted bool
	}{
		{kadm.AppendConfig, "compact", "compact,delete", true},
		{kadm.SubtractConfig, "delete", "compact", true},
		{kadm.SetConfig, "delete", "delete", false},
	} {
		rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: step.op, Name: "cleanup.policy", Value: ptr(step.value)}}, "b")
		check(rs, err, nil)
		if c := describe("b")["cleanup.policy"]; c.MaybeValue() != step.want {
			t.Errorf("cleanup.policy after %v %s: %q, want %q", step.op, step.value, c.MaybeValue(), step.want)
		}
		// A compacted topic refuses keyless records (CORRUPT_MESSAGE).
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte("keyless")}).FirstErr()
		if step.compacted != (err != nil) {
			t.Errorf("keyless record with cleanup.policy=%s: %v", step.want, err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: big}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a 5000-byte record after max.message.bytes=1000: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Kafka's flush.messages and flush.ms set Folio's flush policy.
	for _, step := range []struct {
		op           kadm.IncrementalOp
		key, value   string
		flush        string
		msgs, millis string
	}{
		{kadm.SetConfig, "flush.ms", "1000", "interval:1s", "9223372036854775807", "1000"},
		{kadm.SetConfig, "flush.messages", "9223372036854775807", "interval:1s", "9223372036854775807", "1000"},
		{kadm.SetConfig, "flush.messages", "5", "every:5", "5", "9223372036854775807"},
		{kadm.SetConfig, "flush.messages", "9223372036854775807", "none", "9223372036854775807", "9223372036854775807"},
		{kadm.SetConfig, "flush.messages", "1", "sync", "1", "9223372036854775807"},
		{kadm.SetConfig, "flush.ms", "250", "interval:250ms", "9223372036854775807", "250"},
		{kadm.DeleteConfig, "flush", "", "sync", "1", "9223372036854775807"},
	} {
		var v *string
		if step.op == kadm.SetConfig {
			v = ptr(step.value)
		}
		rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: step.op, Name: step.key, Value: v}}, "a")
		check(rs, err, nil)
		got := describe("a")
		fc, mc, msc := got["flush"], got["flush.messages"], got["flush.ms"]
		if f, m, ms := fc.MaybeValue(), mc.MaybeValue(), msc.MaybeValue(); f != step.flush || m != step.msgs || ms != step.millis {
			t.Errorf("after %v %s=%s: flush %q flush.messages %q flush.ms %q, want %q %q %q", step.op, step.key, step.value, f, m, ms, step.flush, step.msgs, step.millis)
		}
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "flush.messages", Value: ptr("0")}}, "a")
	check(rs, err, map[string]error{"a": kerr.InvalidConfig})

	// index.interval.bytes in Kafka's unit, bytes: stored, reported as
	// set, Kafka's 0 (an entry at every batch) read back as 0, DELETE back
	// to Kafka's default; a negative interval is INVALID_CONFIG.
	for _, step := range []struct {
		op     kadm.IncrementalOp
		value  string
		want   string
		source kmsg.ConfigSource
		stored int32
	}{
		{kadm.SetConfig, "128", "128", kmsg.ConfigSourceDynamicTopicConfig, 128},
		{kadm.SetConfig, "0", "0", kmsg.ConfigSourceDynamicTopicConfig, topic.IndexEveryBatch},
		{kadm.DeleteConfig, "", "4096", kmsg.ConfigSourceDefaultConfig, topic.DefaultIndexIntervalBytes},
	} {
		var v *string
		if step.op == kadm.SetConfig {
			v = ptr(step.value)
		}
		rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: step.op, Name: "index.interval.bytes", Value: v}}, "a")
		check(rs, err, nil)
		if c := describe("a")["index.interval.bytes"]; c.MaybeValue() != step.want || c.Source != step.source {
			t.Errorf("index.interval.bytes after %v %s: %q source %v, want %q %v", step.op, step.value, c.MaybeValue(), c.Source, step.want, step.source)
		}
		if in, err := ts.b.TopicInfo("a"); err != nil || in.Config.IndexIntervalBytes != step.stored {
			t.Errorf("index.interval.bytes after %v %s: stored %d (%v), want %d", step.op, step.value, in.Config.IndexIntervalBytes, err, step.stored)
		}
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "index.interval.bytes", Value: ptr("-1")}}, "a")
	check(rs, err, map[string]error{"a": kerr.InvalidConfig})

	// DELETE goes back to the default.
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "a")
	check(rs, err, nil)
	if c := describe("a")["retention.ms"]; c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms after DELETE: %q source %v", c.MaybeValue(), c.Source)
	}

	// AlterConfigs replaces the whole set: max.message.bytes, not named,
	// goes back to its default, which the open log accepts.
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: ptr("1048576")}}, "a")
	check(rs, err, nil)
	got = describe("a")
	if c := got["retention.bytes"]; c.MaybeValue() != "1048576" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.bytes after AlterConfigs: %+v", c)
	}
	if c := got["max.message.bytes"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("max.message.bytes, not named in AlterConfigs, still %q source %v", c.MaybeValue(), c.Source)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: big}).FirstErr(); err != nil {
		t.Fatalf("a 5000-byte record after max.message.bytes went back to its default: %v", err)
	}
	// The broker's configs are read-only.
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: ptr("3")}}, 0)
	check(rs, err, map[string]error{"0": kerr.InvalidRequest})
}
