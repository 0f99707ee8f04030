package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
)

// TestOverviewSizesAndAssignments: issue 16's topic table shows each
// partition's size and segments (from Stats) and the retention, and the
// group table each member's assigned partitions.
func TestOverviewSizesAndAssignments(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("orders", folio.TopicConfig{Partitions: 2, RetentionAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, values("orders", 0, "a", "b", "c")...)
	produce(t, b, values("orders", 1, "d")...)
	commit(t, b, "billing", "orders", 1) // one member: both partitions are its
	sizes := map[int32]folio.PartitionStats{}
	for _, p := range b.Stats().Partitions {
		if p.Topic == "orders" {
			sizes[p.Partition] = p
		}
	}
	code, body := get(t, console.New(b, nil), "/")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for part, hw := range map[int32]int{0: 3, 1: 1} {
		p := sizes[part]
		if p.Bytes <= 0 || p.Bytes >= 1024 || p.Segments != 1 {
			t.Fatalf("partition %d: %d bytes in %d segments; the test expects one segment of under 1 KiB", part, p.Bytes, p.Segments)
		}
		mustContain(t, body, fmt.Sprintf("<td>%d</td><td>0</td><td>%d</td><td>%d</td><td>%d B</td><td>1</td>", part, hw, hw, p.Bytes))
	}
	mustContain(t, body, "retention.ms=1h", "<td>orders-0, orders-1</td>")
}

// TestSelfContained: no build step and no CDN. Every page and asset the
// console serves loads nothing from another origin, the pages say so to
// the browser (a Content-Security-Policy of 'self'), and the assets are
// served from the binary (embed), not from a directory beside it.
func TestSelfContained(t *testing.T) {
	b := openBroker(t, t.TempDir())
	if _, err := b.CreateTopic("t", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, values("t", 0, "a")...)
	t.Chdir(t.TempDir()) // no assets directory to read from
	srv := httptest.NewServer(console.New(b, nil))
	defer srv.Close()
	external := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|https?://`)
	for _, path := range []string{"/", "/records?topic=t&partition=0", "/static/console.js", "/static/console.css", "/api/overview"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("%s: status %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if m := external.Find(body); m != nil {
			t.Errorf("%s refers to another origin: %q", path, m)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") &&
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, resp.Header.Get("Content-Security-Policy"))
		}
	}
}
