package kafkatest

// Helpers for the tests that drive Kafka clients written in other
// languages (kcat/librdkafka, kafka-python, kafkajs) as subprocesses
// against a real endpoint. Each such test skips, naming the install
// command, only when its client is not installed; .ci/run installs them
// best effort.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serverLog is a slog.Handler for the endpoint's Logger: it records the
// API versions the requests used (the server's debug record per request)
// and keeps the warnings and errors, which a client incompatibility shows
// as (a frame the server cannot read, a handler error).
type serverLog struct {
	mu       sync.Mutex
	versions map[int16]map[int16]bool
	problems []string
}

func (l *serverLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *serverLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *serverLog) WithGroup(string) slog.Handler            { return l }

func (l *serverLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Message == "transport: request" {
		var key, version int16
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "key":
				key = int16(a.Value.Int64())
			case "version":
				version = int16(a.Value.Int64())
			}
			return true
		})
		if l.versions == nil {
			l.versions = map[int16]map[int16]bool{}
		}
		if l.versions[key] == nil {
			l.versions[key] = map[int16]bool{}
		}
		l.versions[key][version] = true
		return nil
	}
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		l.problems = append(l.problems, b.String())
	}
	return nil
}

// used reports whether a request of key was read, in any version.
func (l *serverLog) used(key kmsg.Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.versions[key.Int16()]) > 0
}

// summary lists the APIs and versions used, by key: "Produce v7, Fetch v11".
func (l *serverLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]int16, 0, len(l.versions))
	for k := range l.versions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		var vs []string
		for v := range l.versions[k] {
			vs = append(vs, fmt.Sprint(v))
		}
		sort.Strings(vs)
		parts = append(parts, fmt.Sprintf("%s v%s", kmsg.NameForKey(k), strings.Join(vs, "/")))
	}
	return strings.Join(parts, ", ")
}

// check fails the test on any warning or error the server logged: each
// is a connection the server closed on a client's request, or a request
// it failed.
func (l *serverLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.problems {
		t.Errorf("server logged: %s", p)
	}
}

// newLogged starts a Cluster whose server logs into a serverLog; at the
// end of the test it logs the versions used and fails on the server's
// warnings.
func newLogged(t *testing.T, opts *Options) (*Cluster, *serverLog) {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	sl := &serverLog{}
	o.Server.Logger = slog.New(sl)
	c := New(t, &o)
	t.Cleanup(func() {
		t.Logf("API versions used: %s", sl.summary())
		sl.check(t)
	})
	return c, sl
}

// needTool returns the path of a command, or skips the test naming how to
// install it.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (%s); install it with: %s", name, err, install)
	}
	return p
}

// runTool runs a command with stdin and returns its standard output; it
// fails the test, with the command's standard error, if the command fails
// or runs past a minute.
func runTool(t *testing.T, stdin []byte, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// testRand returns a seeded source and logs its seed (FOLIO_TEST_SEED
// replays one).
func testRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FOLIO_TEST_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("FOLIO_TEST_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (FOLIO_TEST_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed>>1|1))
}

// randomBytes returns n random bytes none of which is in avoid.
func randomBytes(r *rand.Rand, n int, avoid ...byte) []byte {
	b := make([]byte, n)
	for i := range b {
		for {
			b[i] = byte(r.UintN(256))
			if !slices.Contains(avoid, b[i]) {
				break
			}
		}
	}
	return b
}

// readAll reads every record of a topic with the in-process Consumer, from
// each partition's log start to its high watermark, by partition and
// offset.
func readAll(t *testing.T, b *folio.Broker, topicName string) []folio.Record {
	t.Helper()
	in, err := b.DescribeTopic(topicName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for p := range in.Partitions {
		if err := c.Assign(folio.Assignment{Topic: topicName, Partition: int32(p), Start: folio.AtEarliest()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []folio.Record
	for {
		behind := false
		for p := range in.Partitions {
			lag, err := c.Lag(topicName, int32(p))
			if err != nil {
				t.Fatal(err)
			}
			behind = behind || lag > 0
		}
		if !behind {
			break
		}
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("reading %s in process after %d records: %v", topicName, len(out), err)
		}
		out = append(out, recs...)
	}
	sortRecords(out)
	return out
}

func sortRecords(rs []folio.Record) {
	slices.SortFunc(rs, func(a, b folio.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
}

// produceAll writes recs with the in-process Producer (keys decide the
// partition, as in Kafka) and returns them with their partitions and
// offsets.
func produceAll(t *testing.T, b *folio.Broker, recs []folio.Record) []folio.Record {
	t.Helper()
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make([]folio.Record, len(recs))
	for i := range recs {
		r := recs[i]
		part, off, err := p.Produce(ctx, &r)
		if err != nil {
			t.Fatal(err)
		}
		r.Partition, r.Offset = part, off
		out[i] = r
	}
	sortRecords(out)
	return out
}

// sameRecords fails unless got and want hold the same records, by
// partition and offset, with the same keys (nil distinct from empty),
// values and headers, byte for byte.
func sameRecords(t *testing.T, got, want []folio.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if err := diffRecord(g, w); err != nil {
			t.Fatalf("record %d (partition %d offset %d): %v\ngot  %+v\nwant %+v", i, w.Partition, w.Offset, err, g, w)
		}
	}
}

// sameRecordsByKey is sameRecords for records whose partitions and
// offsets a client chose: want, in the order written, has distinct keys;
// got must hold each once, byte for byte, each partition in the order
// written.
func sameRecordsByKey(t *testing.T, got, want []folio.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	byKey := map[string]int{}
	for i, w := range want {
		byKey[string(w.Key)] = i
	}
	last := map[int32]int{}
	for _, g := range got {
		i, ok := byKey[string(g.Key)]
		if !ok {
			t.Fatalf("record at %d/%d has a key not written, or twice: %q", g.Partition, g.Offset, g.Key)
		}
		delete(byKey, string(g.Key))
		w := want[i]
		w.Partition, w.Offset = g.Partition, g.Offset
		if err := diffRecord(g, w); err != nil {
			t.Fatalf("record %d at %d/%d: %v\ngot  %+v\nwant %+v", i, g.Partition, g.Offset, err, g, w)
		}
		if prev, ok := last[g.Partition]; ok && prev > i {
			t.Fatalf("partition %d holds record %d after record %d", g.Partition, i, prev)
		}
		last[g.Partition] = i
	}
}

func diffRecord(g, w folio.Record) error {
	switch {
	case g.Partition != w.Partition || g.Offset != w.Offset:
		return fmt.Errorf("at partition %d offset %d", g.Partition, g.Offset)
	case (g.Key == nil) != (w.Key == nil) || !bytes.Equal(g.Key, w.Key):
		return errors.New("keys differ")
	case (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value):
		return errors.New("values differ")
	case len(g.Headers) != len(w.Headers):
		return fmt.Errorf("%d headers, want %d", len(g.Headers), len(w.Headers))
	}
	for i := range w.Headers {
		if g.Headers[i].Key != w.Headers[i].Key || !bytes.Equal(g.Headers[i].Value, w.Headers[i].Value) {
			return fmt.Errorf("header %d differs", i)
		}
	}
	return nil
}

// committed returns a group's committed offsets by partition (-1: none).
func committed(t *testing.T, b *folio.Broker, groupID, topicName string) map[int32]int64 {
	t.Helper()
	lags, err := b.GroupLag(groupID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, l := range lags {
		if l.Topic == topicName {
			out[l.Partition] = l.Committed
		}
	}
	return out
}

// highWatermarks returns a topic's high watermarks by partition.
func highWatermarks(t *testing.T, b *folio.Broker, topicName string) map[int32]int64 {
	t.Helper()
	in, err := b.DescribeTopic(topicName)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range in.Partitions {
		out[p.Partition] = p.HighWatermark
	}
	return out
}

// storedIdempotent fails t unless every batch of topicName is stored in
// codec with a producer id: client produced idempotently in that codec.
func storedIdempotent(t *testing.T, b *folio.Broker, topicName string, codec record.Codec, client string) {
	t.Helper()
	for _, bt := range storedBatches(t, b, topicName) {
		if bt.Codec() != codec {
			t.Fatalf("a batch at %d is stored in %v, want %v", bt.BaseOffset(), bt.Codec(), codec)
		}
		if bt.ProducerID() < 0 {
			t.Fatalf("a batch at %d has no producer id: %s did not produce idempotently", bt.BaseOffset(), client)
		}
	}
}

// storedBatches returns the batches of every partition of a topic as the
// log holds them (for their codec and producer id).
func storedBatches(t *testing.T, b *folio.Broker, topicName string) []record.Batch {
	t.Helper()
	in, err := b.DescribeTopic(topicName)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Batch
	for _, pi := range in.Partitions {
		part, err := b.Partition(topicName, pi.Partition)
		if err != nil {
			t.Fatal(err)
		}
		for off := pi.LogStartOffset; off < pi.HighWatermark; {
			v, err := part.Read(off, 1<<20, log.BoundHighWatermark)
			if err != nil {
				t.Fatal(err)
			}
			buf, err := v.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			for len(buf) > 0 {
				size, err := record.CheckHeader(buf)
				if err != nil {
					t.Fatal(err)
				}
				batch := record.Batch(slices.Clone(buf[:size]))
				out = append(out, batch)
				off = batch.LastOffset() + 1
				buf = buf[size:]
			}
			v.Release()
		}
	}
	return out
}
