package console

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/foliolog/folio"
)

// pollWait bounds the browser's wait for records that the partition's
// offsets say are there.
const pollWait = 2 * time.Second

// recordsPage is the browser's data.
type recordsPage struct {
	Topics       []string
	Topic        string
	Partition    int32
	Partitions   []int32
	From         string // the offset or time asked for, as typed
	LogStart, HW int64
	Records      []recordView
	Next         int64 // offset of the next page, -1 if none
	Limit        int
}

type recordView struct {
	Offset    int64
	Timestamp string
	Key       fieldView
	Value     fieldView
	Headers   []headerView
}

type headerView struct {
	Key   string
	Value fieldView
}

// fieldView is a key, value or header value as shown: text when it is
// printable UTF-8, hex otherwise.
type fieldView struct {
	Null, Hex bool
	Text      string
	Size      int
	Cut       bool // only the first bytes are shown
}

func (c *Console) field(b []byte) fieldView {
	if b == nil {
		return fieldView{Null: true}
	}
	f := fieldView{Size: len(b)}
	if len(b) > c.opts.MaxValueBytes {
		b, f.Cut = b[:c.opts.MaxValueBytes], true
	}
	if printable(b, f.Cut) {
		f.Text = string(b)
		return f
	}
	f.Hex, f.Text = true, hexDump(b)
	return f
}

// printable reports whether b is UTF-8 text of printable characters and
// white space (a cut may split the last character).
func printable(b []byte, cut bool) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return cut && len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
		b = b[n:]
	}
	return true
}

// hexDump is b as lines of 16 bytes in hex.
func hexDump(b []byte) string {
	out := make([]byte, 0, len(b)*3+len(b)/16)
	for i := 0; i < len(b); i += 16 {
		line := b[i:min(i+16, len(b))]
		if i > 0 {
			out = append(out, '\n')
		}
		out = fmt.Appendf(out, "%08x  ", i)
		for j, x := range line {
			if j > 0 {
				out = append(out, ' ')
			}
			out = hex.AppendEncode(out, []byte{x})
		}
	}
	return string(out)
}

func (c *Console) serveRecords(w http.ResponseWriter, r *http.Request) {
	c.refresh()
	q := r.URL.Query()
	rp := recordsPage{Topic: q.Get("topic"), From: q.Get("from"), Next: -1, Limit: c.opts.MaxRecords}
	topics, err := c.b.Topics()
	if err != nil {
		c.render(w, "records.html", http.StatusInternalServerError, rp, err.Error())
		return
	}
	for _, t := range topics {
		rp.Topics = append(rp.Topics, t.Name)
	}
	if rp.Topic == "" {
		c.render(w, "records.html", http.StatusOK, rp, "")
		return
	}
	info, err := c.b.DescribeTopic(rp.Topic)
	if err != nil {
		c.render(w, "records.html", http.StatusNotFound, rp, err.Error())
		return
	}
	for _, p := range info.Partitions {
		rp.Partitions = append(rp.Partitions, p.Partition)
	}
	if s := q.Get("partition"); s != "" {
		p, err := strconv.ParseInt(s, 10, 32)
		if err != nil || p < 0 || int(p) >= len(info.Partitions) {
			c.render(w, "records.html", http.StatusBadRequest, rp, fmt.Sprintf("partition %q: the topic has partitions 0 to %d", s, len(info.Partitions)-1))
			return
		}
		rp.Partition = int32(p)
	}
	if s := q.Get("limit"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 && n < rp.Limit {
			rp.Limit = n
		}
	}
	pi := info.Partitions[rp.Partition]
	rp.LogStart, rp.HW = pi.LogStartOffset, pi.HighWatermark
	start, err := parseFrom(rp.From)
	if err != nil {
		c.render(w, "records.html", http.StatusBadRequest, rp, err.Error())
		return
	}
	recs, err := c.read(r.Context(), rp.Topic, rp.Partition, start, rp.HW, rp.Limit)
	if err != nil {
		c.render(w, "records.html", http.StatusInternalServerError, rp, err.Error())
		return
	}
	for i := range recs {
		rec := &recs[i]
		rv := recordView{Offset: rec.Offset, Timestamp: rec.Timestamp.UTC().Format("2006-01-02 15:04:05.000"), Key: c.field(rec.Key), Value: c.field(rec.Value)}
		for _, h := range rec.Headers {
			rv.Headers = append(rv.Headers, headerView{Key: h.Key, Value: c.field(h.Value)})
		}
		rp.Records = append(rp.Records, rv)
	}
	if n := len(recs); n > 0 && recs[n-1].Offset+1 < rp.HW {
		rp.Next = recs[n-1].Offset + 1
	}
	c.render(w, "records.html", http.StatusOK, rp, "")
}

// parseFrom reads where to start: empty (the earliest), an offset, or a
// time in RFC 3339 (or "2006-01-02 15:04:05", UTC).
func parseFrom(s string) (folio.Offset, error) {
	if s == "" {
		return folio.AtEarliest(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return folio.Offset{}, fmt.Errorf("offset %d is negative", n)
		}
		return folio.AtOffset(n), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return folio.AtTime(t), nil
		}
	}
	return folio.Offset{}, fmt.Errorf("%q is neither an offset nor a time (RFC 3339, or 2006-01-02 15:04:05 in UTC)", s)
}

// read returns up to limit records of a partition from start, stopping at
// the high watermark hw seen by the page (it never waits for new records).
func (c *Console) read(ctx context.Context, topicName string, partition int32, start folio.Offset, hw int64, limit int) ([]folio.Record, error) {
	cons, err := c.b.NewConsumer(&folio.ConsumerOptions{Name: "console", Reset: folio.ResetEarliest, MaxPollRecords: limit})
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	if err := cons.Assign(folio.Assignment{Topic: topicName, Partition: partition, Start: start}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pollWait)
	defer cancel()
	var out []folio.Record
	for len(out) < limit {
		pos, err := cons.Position(topicName, partition)
		if err != nil {
			return nil, err
		}
		if pos >= hw {
			break
		}
		recs, err := cons.Poll(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			break // compaction left only gaps up to hw
		}
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Offset >= hw || len(out) == limit {
				break
			}
			out = append(out, r)
		}
	}
	return out, nil
}
