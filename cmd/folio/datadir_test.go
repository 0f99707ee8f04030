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
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/topic"
)

// TestDataDirMatchesBroker: the read-only view decodes the catalog and the
// checkpoint to what the Broker that wrote them reports, which catches a
// change of their formats.
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
	if _, err := openDataDir(real); !errors.Is(err, folio.ErrUnknownFormat) || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("format version 9: %v", err)
	}
}

// fixCRC recomputes a metadata frame's trailing checksum.
func fixCRC(data []byte) {
	n := len(data) - metaTrailerSize
	binary.BigEndian.PutUint32(data[n:], crc32.Checksum(data[:n], castagnoli))
}

// FuzzDecodeCatalog: no catalog file panics the decoder; what it accepts
// has valid names and configurations.
func FuzzDecodeCatalog(f *testing.F) {
	dir := f.TempDir()
	b, err := folio.Open(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := b.CreateTopic("seed", folio.TopicConfig{Partitions: 2, Flush: folio.FlushNone}); err != nil {
		f.Fatal(err)
	}
	if err := b.Close(); err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(dir, topic.CatalogFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(real[:20])
	f.Add([]byte("FCAT"))
	f.Add(real[metaHeaderSize : len(real)-metaTrailerSize]) // the JSON payload alone
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a whole file, and as a payload behind a valid frame, so that
		// the JSON decoding is reached past the checksum.
		for _, file := range [][]byte{data, frameMeta(catalogMagic, catalogVersion, data)} {
			infos, err := decodeCatalog("topics.catalog", file)
			if err != nil {
				continue
			}
			for _, in := range infos {
				if checkTopicName(in.Name) != nil || in.Config.Validate() != nil || in.Config.Partitions < 1 {
					t.Fatalf("accepted %+v", in)
				}
			}
		}
	})
}

// frameMeta wraps a payload in a valid metadata frame.
func frameMeta(magic string, version byte, payload []byte) []byte {
	b := append([]byte(magic), 0, version, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// FuzzDecodeCheckpoint: no checkpoint file panics the decoder.
func FuzzDecodeCheckpoint(f *testing.F) {
	dir := f.TempDir()
	b, err := folio.Open(dir, &folio.Options{Now: func() time.Time { return time.UnixMilli(1e12) }})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := b.CreateTopic("seed", folio.TopicConfig{Partitions: 3}); err != nil {
		f.Fatal(err)
	}
	if err := b.Close(); err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(dir, folio.CheckpointFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(real[:len(real)-5])
	f.Add(real[metaHeaderSize : len(real)-metaTrailerSize])
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range [][]byte{data, frameMeta(checkpointMagic, checkpointVersion, data)} {
			m, err := decodeCheckpoint("partitions.checkpoint", file)
			if err != nil {
				var ce *corruptError
				if !errors.As(err, &ce) && !errors.Is(err, folio.ErrUnknownFormat) {
					t.Fatalf("error of an unexpected class: %v", err)
				}
				continue
			}
			for k, start := range m {
				if k.partition < 0 || start < 0 {
					t.Fatalf("accepted %v -> %d", k, start)
				}
			}
		}
	})
}
