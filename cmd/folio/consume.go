package main

import (
	"bufio"
	"fmt"
	"strconv"
	"time"

	"github.com/foliolog/folio/record"
)

const (
	// defaultRecheck is how often a following consume looks for records
	// appended by another process. Across processes there is no
	// notification to wait on (the Broker's waiters live in its own
	// memory), and this tool uses no inotify/kqueue so that it reads the
	// same way on every platform; a tenth of a second keeps it prompt
	// while costing one read per partition per check.
	defaultRecheck = 100 * time.Millisecond
	// pollBytes is how many bytes of batches one partition gets per turn,
	// so that partitions interleave and none starves.
	pollBytes = 1 << 20
)

// startSpec is where -offset starts each partition.
type startSpec struct {
	kind   byte // 'b' beginning, 'e' end, 'o' absolute, 'r' relative to the end
	offset int64
}

func parseStart(s string) (startSpec, error) {
	switch s {
	case "beginning", "earliest":
		return startSpec{kind: 'b'}, nil
	case "end", "latest":
		return startSpec{kind: 'e'}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return startSpec{}, usagef("-offset %q: want beginning, end, an offset, or -N for N before the end", s)
	}
	if n < 0 {
		return startSpec{kind: 'r', offset: -n}, nil
	}
	return startSpec{kind: 'o', offset: n}, nil
}

// resolve returns the offset spec names in a partition with bounds pb.
func (sp startSpec) resolve(pv *partView, pb partBounds) (int64, error) {
	switch sp.kind {
	case 'b':
		return pb.Start, nil
	case 'e':
		return pb.End, nil
	case 'r':
		return max(pb.End-sp.offset, pb.Start), nil
	}
	if sp.offset < pb.Start {
		return 0, fmt.Errorf("%w: %s-%d: offset %d; the partition starts at %d", ErrOffsetDeleted, pv.topic, pv.partition, sp.offset, pb.Start)
	}
	if sp.offset > pb.End {
		return 0, fmt.Errorf("%s-%d: offset %d is past the end of the partition, %d", pv.topic, pv.partition, sp.offset, pb.End)
	}
	return sp.offset, nil
}

func runConsume(e env, args []string) error {
	fs, dir := newFlags(e, "consume", "consume -topic T [-partition P] [-offset beginning|end|N|-N] [-n count] [-e] [-f format] [-group G]")
	name := fs.String("topic", "", "the topic to read (required)")
	part := fs.Int("partition", -1, "the partition to read; -1 reads every partition")
	offset := fs.String("offset", "beginning", "where to start: beginning, end, an offset, or -N for N records before the end")
	count := fs.Int64("n", 0, "exit after this many records (default: no limit)")
	exitAtEnd := fs.Bool("e", false, "exit at the end of the log instead of following it")
	format := fs.String("f", defaultFormat, "output format: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp (ms), %h headers, %K/%S key/value length, \\n, \\t")
	recheck := fs.Duration("interval", defaultRecheck, "how often a following consume checks for new records")
	groupID := fs.String("group", "", "consume as a member of this consumer group (takes the directory's lock); what was printed is committed")
	commitEvery := fs.Duration("commit-interval", 5*time.Second, "with -group, how often to commit what was printed (and always before exiting)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkPartitionFlag(*part); err != nil {
		return err
	}
	if *name == "" {
		return usagef("-topic is required")
	}
	if *count < 0 {
		return usagef("-n %d: want a positive count", *count)
	}
	if *recheck <= 0 {
		return usagef("-interval %v: want a positive duration", *recheck)
	}
	f, err := parseFormat(*format)
	if err != nil {
		return err
	}
	start, err := parseStart(*offset)
	if err != nil {
		return err
	}
	if *groupID != "" {
		if *part >= 0 {
			return usagef("-partition and -group exclude each other: the group assigns the partitions")
		}
		if *commitEvery <= 0 {
			return usagef("-commit-interval %v: want a positive duration", *commitEvery)
		}
		return consumeGroup(e, *dir, *groupID, *name, start, f, *count, *exitAtEnd, *recheck, *commitEvery)
	}
	d, err := openDataDir(*dir)
	if err != nil {
		return err
	}
	in, err := d.topic(*name)
	if err != nil {
		return err
	}
	ps, err := partitions(in, int32(*part))
	if err != nil {
		return err
	}
	var readers []*partReader
	defer func() {
		for _, pr := range readers {
			pr.close()
		}
	}()
	for _, p := range ps {
		pv := d.partView(in, p)
		pb, err := pv.bounds()
		if err != nil {
			return err
		}
		at, err := start.resolve(pv, pb)
		if err != nil {
			return err
		}
		pr := &partReader{pv: pv}
		if err := pr.positionAt(at); err != nil {
			return err
		}
		readers = append(readers, pr)
	}
	c := &printer{w: bufio.NewWriterSize(e.stdout, 64<<10), format: f, topic: in.Name, limit: *count}
	err = c.loop(e, readers, *exitAtEnd, *recheck)
	if ferr := c.w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing the output: %w", ferr)
	}
	return err
}

// printer writes records in a format and counts them.
type printer struct {
	w       *bufio.Writer
	format  recordFormat
	topic   string
	limit   int64 // 0: none
	printed int64
}

// loop reads the partitions in turn until the limit, the end of the log
// (exitAtEnd), or the context's end.
func (c *printer) loop(e env, readers []*partReader, exitAtEnd bool, recheck time.Duration) error {
	t := time.NewTimer(recheck)
	defer t.Stop()
	for {
		allAtEnd := true
		for _, pr := range readers {
			p := pr.pv.partition
			err := pr.poll(pollBytes, func(b record.Batch, from int64) (int64, bool, error) {
				return c.batch(p, b, from)
			})
			if err != nil {
				return err
			}
			if c.done() {
				return nil
			}
			allAtEnd = allAtEnd && pr.atEnd
		}
		if e.ctx.Err() != nil {
			return nil // interrupted: what was printed stays printed
		}
		if !allAtEnd {
			continue
		}
		if exitAtEnd {
			return nil
		}
		if err := c.w.Flush(); err != nil {
			return fmt.Errorf("writing the output: %w", err)
		}
		t.Reset(recheck)
		select {
		case <-e.ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (c *printer) done() bool { return c.limit > 0 && c.printed >= c.limit }

// batch prints the records of b from offset from on and returns the offset
// after the last one printed.
func (c *printer) batch(partition int32, b record.Batch, from int64) (int64, bool, error) {
	it := b.Records(&record.DecodeOptions{SkipCRC: true}) // Next checked the CRC
	defer it.Close()
	for it.Next() {
		r := it.Record()
		if r.Offset() < from {
			continue
		}
		fl := viewFields(c.topic, partition, &r)
		c.format.write(c.w, &fl)
		c.printed++
		if c.done() {
			return r.Offset() + 1, true, nil
		}
	}
	if err := it.Err(); err != nil {
		return from, true, err
	}
	return b.LastOffset() + 1, false, nil
}
