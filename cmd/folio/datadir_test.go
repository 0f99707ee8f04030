package main

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio"
)

// TestDataDirMatchesBroker: the read-only view finds the topics and log
// start offsets the Broker that wrote the directory reports.
func TestDataDirMatchesBroker(t *testing.T) {
	dir := t.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg folio.TopicConfig
	for k, v := range map[string]string{"partitions": "3", "retention.ms": "90m", "flush": "interval:250ms", "cleanup.policy": "compact", "compression.type": "zstd", "message.timestamp.type": "LogAppendTime"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateTopic("alpha", cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("beta", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "beta", Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if err := b.DeleteRecordsBefore("beta", 0, 7); err != nil {
		t.Fatal(err)
	}
	want, err := b.Topics()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // writes the checkpoint
		t.Fatal(err)
	}

	d, err := openDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.topics) != len(want) {
		t.Fatalf("%d topics, the Broker had %d", len(d.topics), len(want))
	}
	for i, in := range d.topics {
		w := want[i]
		if in.Name != w.Name || in.ID != w.ID || in.Config != w.Config || !in.Created.Equal(w.Created) || in.Internal != w.Internal {
			t.Errorf("topic %d: %+v, the Broker had %+v", i, in, w)
		}
	}
	beta, _ := d.topic("beta")
	pb, err := d.partView(beta, 0).bounds()
	if err != nil {
		t.Fatal(err)
	}
	if pb.Start != 7 || pb.End != 10 || pb.Segments != 1 || pb.Bytes == 0 {
		t.Errorf("beta-0 bounds %+v, want start 7 (checkpointed), end 10", pb)
	}
	// And consume honours the start.
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "beta", "-e", "-f", `%o\n`); got != "7\n8\n9\n" {
		t.Errorf("consume after DeleteRecordsBefore(7): %q", got)
	}
	fails(t, 1, []string{"offset 3", "starts at 7"}, "", "consume", "-dir", dir, "-topic", "beta", "-e", "-offset", "3")
}

func TestDataDirRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openDataDir(dir); !errors.Is(err, ErrNoDataDir) {
		t.Errorf("a foreign directory: %v", err)
	}
	file := filepath.Join(dir, "notes.txt")
	if _, err := openDataDir(file); !errors.Is(err, ErrNoDataDir) {
		t.Errorf("a file: %v", err)
	}
	// A format file from the future.
	real := t.TempDir()
	b, err := folio.Open(real, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, err := os.ReadFile(filepath.Join(real, folio.FormatFile))
	if err != nil {
		t.Fatal(err)
	}
	data[5] = 9 // version
	fixCRC(data)
	if err := os.WriteFile(filepath.Join(real, folio.FormatFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openDataDir(real); !errors.Is(err, folio.ErrUnknownFormat) || !strings.Contains(err.Error(), "9") {
		t.Errorf("format version 9: %v", err)
	}
}

// fixCRC recomputes a metadata frame's trailing CRC-32C (Castagnoli),
// as the folio package frames its files.
func fixCRC(data []byte) {
	n := len(data) - 4
	binary.BigEndian.PutUint32(data[n:], crc32.Checksum(data[:n], crc32.MakeTable(crc32.Castagnoli)))
}
