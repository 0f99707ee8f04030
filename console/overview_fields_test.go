package console_test

import (
	"fmt"
	"net/http"
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
