package folio

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio/group"
)

// TestPrintedValuesShowWhatTheyHold: the values a user prints with fmt show
// their fields, not a String of one embedded part (GroupLag used to print
// as [events-0 events-1]), and a record's bytes print as text.
func TestPrintedValuesShowWhatTheyHold(t *testing.T) {
	b := openT(t, t.TempDir(), nil)
	createTopicT(t, b, "events", TopicConfig{Partitions: 2, Flush: FlushNone})
	p := producerT(t, b, &ProducerOptions{ManualPartitioning: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts := time.UnixMilli(1_700_000_000_000).UTC()
	for i := range 3 {
		if _, _, err := p.Produce(ctx, &Record{Topic: "events", Partition: 0, Key: []byte(fmt.Sprint("k", i)), Value: []byte("hello"),
			Headers: []Header{{Key: "h", Value: []byte("v")}, {Key: "null"}}, Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	gc := joinT(t, b, "app", []string{"events"}, &GroupOptions{DisableAutoCommit: true})
	defer gc.Close()
	recs, err := gc.Poll(ctx)
	if err != nil || len(recs) == 0 {
		t.Fatalf("Poll: %v, %v", recs, err)
	}
	if err := gc.CommitOffsets(ctx, map[TopicPartition]int64{{Topic: "events", Partition: 0}: 1}); err != nil {
		t.Fatal(err)
	}

	lag, err := b.GroupLag("app")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", lag)
	for _, want := range []string{"Topic:events Partition:0 Committed:1 LogStartOffset:0 HighWatermark:3 Lag:2",
		"Topic:events Partition:1 Committed:-1 LogStartOffset:0 HighWatermark:0 Lag:0"} {
		if !strings.Contains(got, want) {
			t.Errorf("%%+v of GroupLag = %s\nwant it to hold %s", got, want)
		}
	}
	if got := fmt.Sprintf("%v", lag[0]); !strings.HasPrefix(got, "{events 0 1 0 3 2 ") {
		t.Errorf("%%v of a PartitionLag = %s", got)
	}

	r := recs[0]
	wantRec := `{Topic:events Partition:0 Offset:0 Key:"k0" Value:"hello" Headers:[{Key:h Value:"v"} {Key:null Value:nil}] Timestamp:` + r.Timestamp.String() + `}`
	if got := fmt.Sprintf("%+v", r); got != wantRec {
		t.Errorf("%%+v of a Record = %s\nwant %s", got, wantRec)
	}
	if got := fmt.Sprintf("%v", &r); !strings.HasPrefix(got, `&{events 0 0 "k0" "hello" [{h "v"} {null nil}] `) && !strings.HasPrefix(got, `{events 0 0 "k0" "hello" [{h "v"} {null nil}] `) {
		t.Errorf("%%v of a *Record = %s", got)
	}
	if got := fmt.Sprintf("%+v", Record{Topic: "t"}); !strings.Contains(got, "Key:nil Value:nil Headers:[]") {
		t.Errorf("%%+v of a Record without key or value = %s", got)
	}
	if got := fmt.Sprintf("%#v", Record{Topic: "t"}); !strings.Contains(got, `Topic:"t"`) {
		t.Errorf("%%#v of a Record = %s", got)
	}

	if got := fmt.Sprintf("%v", group.StartOffset{TopicPartition: TopicPartition{Topic: "events", Partition: 1}, Offset: 7}); got != "events-1@7" {
		t.Errorf("%%v of a StartOffset = %s", got)
	}
	if got := fmt.Sprintf("%v", gc.Assignment()); got != "[events-0 events-1]" {
		t.Errorf("%%v of an Assignment = %s", got)
	}
	ti, err := b.DescribeTopic("events")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v", ti); !strings.Contains(got, "Flush:none ReadPath:mmap") || !strings.Contains(got, "{Partition:0 LogStartOffset:0 HighWatermark:3 LogEndOffset:3}") {
		t.Errorf("%%+v of a TopicInfo = %s", got)
	}
	if got := fmt.Sprintf("%+v", b.Stats()); !strings.Contains(got, "Topic:events Partition:0 LogStartOffset:0 HighWatermark:3") || !strings.Contains(got, "Consumers:[{Consumer:group-app Position:") {
		t.Errorf("%%+v of Stats = %s", got)
	}
}
