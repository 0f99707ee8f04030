package transport

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedRequests returns a valid encoding of a request of every registered
// API at a few versions, against topic "t".
func seedRequests(t testing.TB) [][]byte {
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	bld.Append(record.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1})
	batch, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, a := range registered() {
		for _, v := range []int16{a.min, (a.min + a.max) / 2, a.max} {
			req := kmsg.RequestForKey(a.key)
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = 1
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = append([]byte(nil), batch...)
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			case *kmsg.FetchRequest:
				r.MaxBytes = 1 << 20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = "t"
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics = append(r.Topics, rt)
			case *kmsg.MetadataRequest:
				rt := kmsg.NewMetadataRequestTopic()
				name := "t"
				rt.Topic = &name
				r.Topics = append(r.Topics, rt)
			case *kmsg.ListOffsetsRequest:
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "t"
				for _, ts := range []int64{-1, -2, -3, 0} {
					rp := kmsg.NewListOffsetsRequestTopicPartition()
					rp.Timestamp = ts
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			out = append(out, kmsgFrame(req, 3)[4:])
		}
	}
	return out
}

// FuzzRequestFrame feeds arbitrary frames to the header parser and the
// decoder: they return an error or a request, never panic.
func FuzzRequestFrame(f *testing.F) {
	for _, s := range seedRequests(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, fr []byte) {
		h, body, err := parseHeader(fr)
		if err != nil {
			return
		}
		if _, ok := lookupAPI(h.key, h.version); !ok {
			return
		}
		if req, err := decodeRequest(&h, body); err == nil && req == nil {
			t.Fatal("nil request without an error")
		}
	})
}

// FuzzDispatch runs what decodes through its handler against a backend
// with a topic, and writes the response: no panic, no hang, and a
// response kmsg can read back (the Fetch frame included).
func FuzzDispatch(f *testing.F) {
	for _, s := range seedRequests(f) {
		f.Add(s)
	}
	b := newTestBackend(f)
	b.mustCreate(f, "t", topic.Config{Partitions: 2})
	s, err := NewServer(b, &Options{Logger: testLogger(f), RequestTimeout: 2 * time.Second, DisableAutoCreate: true})
	if err != nil {
		f.Fatal(err)
	}
	cli, srv := net.Pipe()
	defer cli.Close()
	c := newConn(s, srv, hostPort{"localhost", 9092})
	f.Fuzz(func(t *testing.T, fr []byte) {
		h, body, err := parseHeader(fr)
		if err != nil {
			return
		}
		a, ok := lookupAPI(h.key, h.version)
		if !ok {
			return
		}
		req, err := decodeRequest(&h, body)
		if err != nil {
			return
		}
		if fetch, ok := req.(*kmsg.FetchRequest); ok {
			fetch.MaxWaitMillis = 0 // no long poll in a fuzz loop
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := a.h(ctx, &reqCtx{s: s, c: c, hdr: &h}, req)
		if err != nil || resp == nil {
			return
		}
		defer resp.release()
		var buf bytes.Buffer
		w := &respWriter{raw: &buf, bw: bufio.NewWriter(&buf)}
		if err := resp.writeTo(w, &h); err != nil {
			t.Fatal(err)
		}
		out := buf.Bytes()
		if len(out) < 8 {
			t.Fatalf("%d-byte response", len(out))
		}
		out = out[8:]
		if h.flexible && h.key != kmsg.ApiVersions.Int16() {
			if out, err = skipTags(out); err != nil {
				t.Fatal(err)
			}
		}
		kr := kmsg.ResponseForKey(h.key)
		kr.SetVersion(h.version)
		if err := kr.ReadFrom(out); err != nil {
			t.Fatalf("%s v%d: response kmsg cannot read: %v", kmsg.NameForKey(h.key), h.version, err)
		}
	})
}
