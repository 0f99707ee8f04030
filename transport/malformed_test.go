package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame returns a request frame: length, header v1 (v2 when flexible) and
// body.
func frame(key, version int16, corr int32, body []byte, flexible bool) []byte {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// kmsgFrame encodes req as a frame.
func kmsgFrame(req kmsg.Request, corr int32) []byte {
	return frame(req.Key(), req.GetVersion(), corr, req.AppendTo(nil), req.IsFlexible())
}

// expectClosed reads from c until the server closes it, failing if a
// response to the bad frame comes back or the connection stays open.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: connection not closed by the server: %v", what, err)
	}
	if len(b) != 0 {
		t.Fatalf("%s: got %d bytes back, want the connection closed", what, len(b))
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, nil, &Options{MaxRequestBytes: 1 << 20})
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("t"))
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("the good client failed: %v", err)
		}
	}
	produce()

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	badBody := kmsgFrame(meta, 1)
	badBody = badBody[:len(badBody)-3] // cut short inside the body
	binary.BigEndian.PutUint32(badBody, uint32(len(badBody)-4))

	rnd := make([]byte, 300)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint32(rnd, 296)

	cases := []struct {
		name string
		b    []byte
	}{
		{"2 GiB length", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe}},
		{"length above MaxRequestBytes", binary.BigEndian.AppendUint32(nil, 1<<20+1)},
		{"short header", []byte{0, 0, 0, 3, 0, 3, 0}},
		{"unknown API key", frame(9999, 0, 1, nil, false)},
		{"unserved version", frame(kmsg.Produce.Int16(), 99, 1, nil, false)},
		{"undecodable body", badBody},
		{"random bytes", rnd},
	}
	for _, c := range cases {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(c.b); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc, c.name)
		nc.Close()
		produce()
	}
}

func TestUnsupportedApiVersionsAnswersV0(t *testing.T) {
	ts := startServer(t, nil, nil)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(frame(kmsg.ApiVersions.Int16(), 77, 5, []byte{1, 2, 3}, true)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	body := readResponse(t, nc, 5, false)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerrUnsupportedVersion || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("error %d with %d keys, want UNSUPPORTED_VERSION with %d", resp.ErrorCode, len(resp.ApiKeys), len(apis))
	}
}

// readResponse reads one response frame and returns its body after the
// header.
func readResponse(t *testing.T, nc net.Conn, corr int32, flexible bool) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(nc, l[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	if flexible {
		var err error
		if b, err = skipTags(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	// A long-polling fetch first, then quick requests: the answers still
	// come in request order.
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	var out bytes.Buffer
	out.Write(kmsgFrame(fetch, 1))
	for i := int32(2); i <= 5; i++ {
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 2
		out.Write(kmsgFrame(av, i))
	}
	start := time.Now()
	if _, err := nc.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 11
	if err := fr.ReadFrom(readResponse(t, nc, 1, false)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("an empty fetch with MaxWaitMs 300 returned after %v", waited)
	}
	for i := int32(2); i <= 5; i++ {
		readResponse(t, nc, i, false)
	}
}

func TestShutdownIsPromptWithParkedFetches(t *testing.T) {
	b := newTestBackend(t)
	b.mustCreate(t, "t", topic.Config{Partitions: 1})
	s, err := NewServer(b, &Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	parked := make(chan struct{}, 100)
	onPark := func() { parked <- struct{}{} }
	s.onPark.Store(&onPark)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), l) }()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 12, 60000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	var conns []net.Conn
	for i := range 50 {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(kmsgFrame(fetch, int32(i))); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	for range conns {
		select {
		case <-parked:
		case err := <-done:
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			t.Fatal("fetches did not park")
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Shutdown took %v with parked fetches of MaxWaitMs 60000", took)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	// Every parked fetch was answered before its connection closed.
	for i, nc := range conns {
		body := readResponse(t, nc, int32(i), true)
		fr := kmsg.NewPtrFetchResponse()
		fr.Version = 12
		if err := fr.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestFetchMinBytesZeroAnswersAtOnce(t *testing.T) {
	ts := startServer(t, nil, nil)
	ts.b.mustCreate(t, "t", topic.Config{Partitions: 1})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 30000, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	start := time.Now()
	if _, err := nc.Write(kmsgFrame(fetch, 1)); err != nil {
		t.Fatal(err)
	}
	readResponse(t, nc, 1, false)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a MinBytes 0 fetch waited %v", took)
	}
}
