package transport

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAdminTopics(t *testing.T) {
	ts := startServer(t, nil, nil)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, ts.addr))
	hour, one, bogus := "3600000", "1", "x"
	res, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": &hour, "min.insync.replicas": &one, "compression.type": ptr("uncompressed")}, "a")
	if err != nil || res.Err != nil {
		t.Fatalf("CreateTopic: %v, %v", err, res.Err)
	}
	in, err := ts.b.TopicInfo("a")
	if err != nil || in.Config.Partitions != 2 || in.Config.RetentionAge.Milliseconds() != 3600000 {
		t.Fatalf("created %+v, %v", in.Config, err)
	}
	if [16]byte(res.ID) != [16]byte(in.ID) {
		t.Fatalf("CreateTopics answered id %x, the topic has %x", res.ID, in.ID)
	}
	// A key no one knows is refused, naming it; a second create is TOPIC_ALREADY_EXISTS.
	res, _ = adm.CreateTopic(ctx, 1, -1, map[string]*string{"no.such.key": &bogus}, "b")
	if !errors.Is(res.Err, kerr.InvalidConfig) {
		t.Fatalf("unknown key: %v", res.Err)
	}
	res, _ = adm.CreateTopic(ctx, 1, -1, nil, "a")
	if !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("existing topic: %v", res.Err)
	}
	res, _ = adm.CreateTopic(ctx, 1, 3, nil, "c")
	if !errors.Is(res.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 3: %v", res.Err)
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("a", nil)
	if err != nil || rc.Err != nil {
		t.Fatal(err, rc.Err)
	}
	got := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	if c := got["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != 1 {
		t.Fatalf("retention.ms: %+v", c)
	}
	if c := got["segment.bytes"]; c.MaybeValue() != "1073741824" || c.Source != 5 {
		t.Fatalf("segment.bytes: %+v", c)
	}
	if c := got["index.interval.bytes"]; c.MaybeValue() != "4096" || c.Source != 5 {
		t.Fatalf("index.interval.bytes: %+v, want Kafka's default 4096, DEFAULT_CONFIG", c)
	}
	if c := got["compression.type"]; c.MaybeValue() != "uncompressed" {
		t.Fatalf("compression.type: %+v", c)
	}
	if c := got["min.insync.replicas"]; c.MaybeValue() != "1" {
		t.Fatalf("min.insync.replicas: %+v", c)
	}

	cp, err := adm.CreatePartitions(ctx, 3, "a")
	if err != nil || cp["a"].Err != nil {
		t.Fatalf("CreatePartitions: %v %v", err, cp["a"].Err)
	}
	if in, _ := ts.b.TopicInfo("a"); in.Config.Partitions != 5 {
		t.Fatalf("%d partitions after adding 3 to 2", in.Config.Partitions)
	}
	dr, err := adm.DeleteTopics(ctx, "a")
	if err != nil || dr["a"].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, dr["a"].Err)
	}
	dr, _ = adm.DeleteTopics(ctx, "a")
	if !errors.Is(dr["a"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting a missing topic: %v", dr["a"].Err)
	}
}

func ptr(s string) *string { return &s }
