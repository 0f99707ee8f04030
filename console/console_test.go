package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
	"github.com/foliolog/folio/group"
)

func openBroker(t *testing.T, dir string) *folio.Broker {
	t.Helper()
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func produce(t *testing.T, b *folio.Broker, recs ...*folio.Record) {
	t.Helper()
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, r := range recs {
		if _, _, err := p.Produce(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func values(topic string, partition int32, vs ...string) []*folio.Record {
	var out []*folio.Record
	for _, v := range vs {
		out = append(out, &folio.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	return out
}

// get fetches path from h and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func mustContain(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Fatalf("page lacks %q:\n%s", w, body)
		}
	}
}

// commit joins groupID and commits offset in topic's partition 0, leaving
// the member in the group.
func commit(t *testing.T, b *folio.Broker, groupID, topic string, offset int64) *folio.GroupConsumer {
	t.Helper()
	gc, err := b.JoinGroup(context.Background(), groupID, []string{topic}, &folio.GroupOptions{DisableAutoCommit: true, Consumer: &folio.ConsumerOptions{Name: "billing-service"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gc.Close() })
	if err := gc.CommitOffsets(context.Background(), map[folio.TopicPartition]int64{{Topic: topic, Partition: 0}: offset}); err != nil {
		t.Fatal(err)
	}
	return gc
}

func TestOverview(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, values("orders", 0, "a", "b", "c", "d", "e")...)
	commit(t, b, "billing", "orders", 2)
	const evilGroup = `<img src=x onerror=alert(1)>`
	commit(t, b, evilGroup, "orders", 0)
	code, body := get(t, console.New(b, nil), "/")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if strings.Contains(body, evilGroup) || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Fatal("a group id reached the page unescaped")
	}
	mustContain(t, body,
		`data-topic="orders"`, "2 partitions, 5 records",
		"<td>0</td><td>0</td><td>5</td><td>5</td>", // partition 0: log start, high watermark, log end
		"retention.ms=", "cleanup.policy=delete",
		`data-group="billing"`, `<span class="badge">Stable</span>`, "billing-service",
		`<td>orders</td><td>0</td><td class="committed">2</td><td class="hw">5</td><td class="lag">3</td>`,
		`href="records?topic=orders&amp;partition=1"`,
		`<script src="static/console.js"></script>`,
	)
	// The live chart's data.
	code, body = get(t, console.New(b, nil), "/api/overview")
	if code != http.StatusOK {
		t.Fatalf("api status %d", code)
	}
	var api struct {
		Topics []struct {
			Name         string
			LogEndOffset int64
		}
		Groups []struct {
			Name      string
			Lag       int64
			Committed int64
		}
	}
	if err := json.Unmarshal([]byte(body), &api); err != nil {
		t.Fatal(err, body)
	}
	var orders, billing bool
	for _, tp := range api.Topics {
		orders = orders || (tp.Name == "orders" && tp.LogEndOffset == 5)
	}
	for _, g := range api.Groups {
		billing = billing || (g.Name == "billing" && g.Lag == 3 && g.Committed == 2)
	}
	if !orders || !billing {
		t.Fatalf("api overview: %s", body)
	}
}

// The console never makes the Broker create __consumer_offsets.
func TestNoOffsetsTopicCreated(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("t", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	h := console.New(b, nil)
	for _, path := range []string{"/", "/api/overview", "/records?topic=t"} {
		if code, body := get(t, h, path); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	if _, err := b.DescribeTopic(group.OffsetsTopic); !errors.Is(err, folio.ErrUnknownTopic) {
		t.Fatalf("%s after the console's requests: %v", group.OffsetsTopic, err)
	}
}

func TestRecordBrowser(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("t", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	const evil = `<script>alert("x")</script>`
	before := time.Now().Add(-time.Hour)
	produce(t, b,
		&folio.Record{Topic: "t", Partition: 1, Key: []byte("k0"), Value: []byte("hello world"), Timestamp: before},
		&folio.Record{Topic: "t", Partition: 1, Key: []byte(evil), Value: []byte(evil),
			Headers: []folio.Header{{Key: evil, Value: []byte(evil)}, {Key: "bin", Value: []byte{0, 1, 0xfe}}}},
		&folio.Record{Topic: "t", Partition: 1, Key: []byte("k2"), Value: []byte{0xde, 0xad, 0xbe, 0xef}},
		&folio.Record{Topic: "t", Partition: 1, Key: []byte("k3")}, // null value
	)
	h := console.New(b, &console.Options{MaxRecords: 3})
	code, body := get(t, h, "/records?topic=t&partition=1")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if strings.Contains(body, "<script>alert") {
		t.Fatalf("a record's bytes reached the page unescaped:\n%s", body)
	}
	mustContain(t, body,
		`<pre class="text">hello world</pre>`,
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`,
		`<pre class="hex">00000000  de ad be ef</pre>`,
		`<pre class="hex">00000000  00 01 fe</pre>`,
		"3 records shown, at most 3",
		`href="records?topic=t&amp;partition=1&amp;from=3"`, // the fourth is on the next page
	)
	code, body = get(t, h, "/records?topic=t&partition=1&from=3")
	if code != http.StatusOK {
		t.Fatal(code)
	}
	mustContain(t, body, `data-offset="3"`, `<span class="null">null</span>`, "1 records shown")
	// From a time: the first record is an hour old, the rest new.
	code, body = get(t, h, "/records?topic=t&partition=1&from="+url.QueryEscape(before.Add(time.Minute).UTC().Format(time.RFC3339)))
	if code != http.StatusOK {
		t.Fatal(code)
	}
	if strings.Contains(body, `data-offset="0"`) || !strings.Contains(body, `data-offset="1"`) {
		t.Fatalf("from a time: %s", body)
	}
	for path, want := range map[string]int{
		"/records?topic=t&partition=2":    http.StatusBadRequest,
		"/records?topic=t&from=yesterday": http.StatusBadRequest,
		"/records?topic=nope":             http.StatusNotFound,
		"/records":                        http.StatusOK,
		"/static/console.js":              http.StatusOK,
		"/metrics":                        http.StatusNotFound,
		"/records?topic=t&partition=0":    http.StatusOK, // empty partition: no wait
	} {
		if code, _ := get(t, h, path); code != want {
			t.Errorf("%s: status %d, want %d", path, code, want)
		}
	}
}

func TestMetricsMounted(t *testing.T) {
	b := openBroker(t, t.TempDir())
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "folio_up 1\n") })
	h := console.New(b, &console.Options{Metrics: metrics})
	if code, body := get(t, h, "/metrics"); code != http.StatusOK || body != "folio_up 1\n" {
		t.Fatalf("/metrics: %d %q", code, body)
	}
	_, body := get(t, h, "/")
	mustContain(t, body, `<a href="metrics">Metrics</a>`)
}

// Beside an application that holds the directory, the console runs on a
// read-only Broker (no lock), follows new records, and reads the groups
// from __consumer_offsets itself.
func TestReadOnlyBesideWriter(t *testing.T) {
	dir := t.TempDir()
	w := openBroker(t, dir)
	if _, err := w.CreateTopic("orders", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, w, values("orders", 0, "a", "b", "c", "d")...)
	commit(t, w, "billing", "orders", 1)

	ro, err := folio.OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	h := console.New(ro, &console.Options{RefreshInterval: -1})
	code, body := get(t, h, "/")
	if code != http.StatusOK {
		t.Fatal(code, body)
	}
	mustContain(t, body, `<span class="badge">read-only</span>`, `data-topic="orders"`, `data-group="billing"`,
		`<td>orders</td><td>0</td><td class="committed">1</td><td class="hw">4</td><td class="lag">3</td>`, "billing-service", "orders-0")

	// The application goes on; the console's next request sees it.
	produce(t, w, values("orders", 0, "e", "f")...)
	commit(t, w, "billing2", "orders", 6)
	_, body = get(t, h, "/")
	// billing's commit was read by the first request, billing2's by this
	// one, which reads only what was appended since.
	mustContain(t, body, "1 partition, 6 records", `data-group="billing2"`,
		`<td>orders</td><td>0</td><td class="committed">6</td><td class="hw">6</td><td class="lag">0</td>`,
		`<td>orders</td><td>0</td><td class="committed">1</td><td class="hw">6</td><td class="lag">5</td>`)
	code, body = get(t, h, "/records?topic=orders&from=5")
	if code != http.StatusOK {
		t.Fatal(code)
	}
	mustContain(t, body, `<pre class="text">f</pre>`)
	// The writer kept its lock all along: a second writer is still refused.
	if b, err := folio.Open(dir, nil); err == nil {
		_ = b.Close()
		t.Fatal("a second writer opened the directory")
	}
}

// apiOut is what the chart reads of /api/overview for records out.
type apiOut struct {
	Out    string
	Topics []struct {
		Name       string
		RecordsOut int64
	}
	Groups []struct{ Committed int64 }
}

func readAPI(t *testing.T, h http.Handler) apiOut {
	t.Helper()
	code, body := get(t, h, "/api/overview")
	if code != http.StatusOK {
		t.Fatalf("api status %d: %s", code, body)
	}
	var api apiOut
	if err := json.Unmarshal([]byte(body), &api); err != nil {
		t.Fatal(err, body)
	}
	return api
}

func recordsOut(api apiOut, topic string) int64 {
	for _, tp := range api.Topics {
		if tp.Name == topic {
			return tp.RecordsOut
		}
	}
	return -1
}

// In the process that serves the Broker, records out are the records its
// readers were handed: a plain consumer with no group (which commits
// nothing) reading N records raises them by N, and the page says they are
// reads.
func TestRecordsOutCountsReads(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, values("orders", 0, "a", "b", "c", "d", "e")...)
	produce(t, b, values("orders", 1, "f", "g")...)
	h := console.New(b, nil)
	before := readAPI(t, h)
	if before.Out != "reads" || recordsOut(before, "orders") != 0 {
		t.Fatalf("before any read: out %q, orders recordsOut %d", before.Out, recordsOut(before, "orders"))
	}

	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign(folio.Assignment{Topic: "orders", Partition: 0, Start: folio.AtOffset(1)},
		folio.Assignment{Topic: "orders", Partition: 1, Start: folio.AtOffset(0)}); err != nil {
		t.Fatal(err)
	}
	const n = 6 // offsets 1-4 of partition 0, 0-1 of partition 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for got := 0; got < n; {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
	after := readAPI(t, h)
	if d := recordsOut(after, "orders") - recordsOut(before, "orders"); d != n {
		t.Fatalf("a plain consumer read %d records; recordsOut rose by %d", n, d)
	}
	if len(after.Groups) != 0 {
		t.Fatalf("groups %+v: the reads must count without any group", after.Groups)
	}
	_, body := get(t, h, "/")
	mustContain(t, body, `data-out="reads"`, "records out/s (read)")
}

// A read-only console cannot see another process's reads: its records out
// are the estimate from groups' committed offsets, and the page says so.
func TestRecordsOutReadOnlyIsEstimate(t *testing.T) {
	dir := t.TempDir()
	w := openBroker(t, dir)
	if _, err := w.CreateTopic("orders", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, w, values("orders", 0, "a", "b")...)
	ro, err := folio.OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	h := console.New(ro, &console.Options{RefreshInterval: -1})
	if api := readAPI(t, h); api.Out != "committed" {
		t.Fatalf("read-only console: out %q, want committed", api.Out)
	}
	_, body := get(t, h, "/")
	mustContain(t, body, `data-out="committed"`, "records out/s (estimate: groups' committed offsets)")
}
