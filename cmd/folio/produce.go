package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
)

// reportQueue is how many acknowledgements may wait for the -report writer
// before callbacks block, which then holds back the partitions' appends:
// a slow reader of stdout slows the producer instead of growing memory.
const reportQueue = 4096

func runProduce(e env, args []string) (err error) {
	fs, dir := newFlags(e, "produce", "produce -topic T [-partition P] [-K delim] [-report] [-batch-bytes N]")
	name := fs.String("topic", "", "the topic to produce to (required; created with default settings if missing)")
	part := fs.Int("partition", -1, "the partition for every record; -1 lets Kafka's partitioner choose (by key hash; unkeyed records stick to a partition per batch)")
	delim := fs.String("K", "", `key delimiter: each line is key, delimiter, value ("\t" is a tab); a line without it has no key`)
	report := fs.Bool("report", false, "after each record is acknowledged, print line<TAB>partition<TAB>offset")
	batchBytes := fs.String("batch-bytes", topic.FormatBytes(folio.DefaultBatchBytes), "how many bytes of records go in one batch (a size: 1MiB, 4096; Kafka's batch.size); a longer line goes in a batch of its own, up to the topic's max.message.bytes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	batch, err := topic.ParseBytes(*batchBytes)
	if err != nil || batch < record.HeaderSize || batch > math.MaxInt32 {
		return usagef("-batch-bytes %q: want a size from %d bytes to 2GiB", *batchBytes, record.HeaderSize)
	}
	if err := checkPartitionFlag(*part); err != nil {
		return err
	}
	if *name == "" {
		return usagef("-topic is required")
	}
	if err := topic.ValidateName(*name); err != nil {
		return err // internal topics (__consumer_offsets) hold Folio's own records
	}
	keyDelim := []byte(unescapeDelim(*delim))
	if *delim != "" && len(keyDelim) == 0 {
		return usagef("-K %q: empty delimiter", *delim)
	}
	b, err := openBroker(e, *dir, true)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	in, err := b.DescribeTopic(*name)
	if errors.Is(err, folio.ErrUnknownTopic) {
		// Kafka's auto.create.topics.enable, said out loud: a typo in -topic
		// must not go unnoticed.
		in, err = b.CreateTopic(*name, folio.TopicConfig{})
		switch {
		case err == nil:
			fmt.Fprintf(e.stderr, "folio produce: created topic %q in %s (%s, default settings): it did not exist\n",
				in.Name, *dir, plural(len(in.Partitions), "partition"))
		case errors.Is(err, folio.ErrTopicExists):
			in, err = b.DescribeTopic(*name)
		}
	}
	if err != nil {
		return err
	}
	if *part >= len(in.Partitions) {
		return fmt.Errorf("%w %d: topic %q has partitions 0 to %d", ErrUnknownPartition, *part, in.Name, len(in.Partitions)-1)
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: *part >= 0, BatchBytes: int(batch)})
	if err != nil {
		return err
	}
	pr := &lineProducer{
		e: e, p: p, topic: in.Name, partition: int32(*part), delim: keyDelim,
		maxLine: int(in.Config.MaxMessageBytes),
	}
	if *report {
		pr.reports = make(chan string, reportQueue)
		pr.reportDone = make(chan struct{})
		go pr.writeReports()
	}
	readErr := pr.run()
	closeErr := p.Close() // appends what is buffered and settles every callback
	if pr.reports != nil {
		close(pr.reports)
		<-pr.reportDone
	}
	if err := pr.failure(); err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	return closeErr
}

// unescapeDelim turns the escapes a shell makes awkward to type into their
// characters: \t a tab, \n a newline, \\ a backslash.
func unescapeDelim(s string) string {
	r := bytes.NewBuffer(nil)
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 't':
				r.WriteByte('\t')
				i++
				continue
			case 'n':
				r.WriteByte('\n')
				i++
				continue
			case '\\':
				r.WriteByte('\\')
				i++
				continue
			}
		}
		r.WriteByte(s[i])
	}
	return r.String()
}

// lineProducer produces stdin's lines as they arrive.
type lineProducer struct {
	e         env
	p         *folio.Producer
	topic     string
	partition int32 // -1: the producer's partitioner
	delim     []byte
	maxLine   int

	reports    chan string // nil without -report
	reportDone chan struct{}

	// failMu guards failed: the first record that was not acknowledged.
	failMu sync.Mutex
	failed error
}

// run reads lines until stdin ends, a record fails, or the context ends
// (SIGINT, SIGTERM: a stream that never ends is stopped this way, and what
// was read is still produced).
func (lp *lineProducer) run() error {
	type line struct {
		n    int64
		data []byte
		err  error
	}
	lines := make(chan line)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// This goroutine may stay blocked in a read of stdin after run
		// returns; the process exits right after, so it is not waited for.
		r := bufio.NewReaderSize(lp.e.stdin, 64<<10)
		for n := int64(1); ; n++ {
			data, err := readLine(r, lp.maxLine)
			if errors.Is(err, io.EOF) {
				n = 0 // the end of the input
			}
			select {
			case lines <- line{n: n, data: data, err: err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var l line
		select {
		case l = <-lines:
		case <-lp.e.ctx.Done():
			return nil
		}
		if l.n == 0 {
			return nil // end of input
		}
		if l.err != nil {
			return fmt.Errorf("line %d: %w", l.n, l.err)
		}
		if lp.failure() != nil {
			return nil // stop reading; the failure is reported
		}
		lp.produce(l.n, l.data)
	}
}

// errLineTooLong is a line longer than the topic's max.message.bytes: it
// cannot be a record, and reading it whole would hold unbounded memory.
var errLineTooLong = errors.New("line longer than the topic's max.message.bytes")

// readLine returns the next line without its newline, a final line
// without one, or io.EOF. The slice is the caller's: the producer holds it
// until the record is acknowledged.
func readLine(r *bufio.Reader, maxLen int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(out)+len(chunk) > maxLen+1 {
			return nil, fmt.Errorf("%w (%d bytes)", errLineTooLong, maxLen)
		}
		out = append(out, chunk...)
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(out) == 0 {
				return nil, io.EOF
			}
			return out, nil
		default:
			return nil, err
		}
	}
}

// produce hands one line to the producer. The acknowledgement (or error)
// comes back in the callback, in each partition's offset order.
func (lp *lineProducer) produce(n int64, data []byte) {
	rec := &folio.Record{Topic: lp.topic, Value: data}
	if len(lp.delim) > 0 {
		if k, v, ok := bytes.Cut(data, lp.delim); ok {
			rec.Key, rec.Value = k, v
		}
	}
	if lp.partition >= 0 {
		rec.Partition = lp.partition
	}
	lp.p.ProduceAsync(context.Background(), rec, func(r *folio.Record, err error) {
		if err != nil {
			lp.fail(fmt.Errorf("%w: line %d: %w", ErrProduceFailed, n, err))
			return
		}
		if lp.reports != nil {
			lp.reports <- strconv.FormatInt(n, 10) + "\t" + strconv.FormatInt(int64(r.Partition), 10) + "\t" + strconv.FormatInt(r.Offset, 10) + "\n"
		}
	})
}

func (lp *lineProducer) fail(err error) {
	lp.failMu.Lock()
	defer lp.failMu.Unlock()
	if lp.failed == nil {
		lp.failed = err
	}
}

func (lp *lineProducer) failure() error {
	lp.failMu.Lock()
	defer lp.failMu.Unlock()
	return lp.failed
}

// writeReports prints acknowledgements in the order the callbacks ran,
// flushing whenever it has caught up so each line is out as soon as it is
// known, while a burst of acknowledgements shares writes.
func (lp *lineProducer) writeReports() {
	defer close(lp.reportDone)
	w := bufio.NewWriter(lp.e.stdout)
	defer w.Flush()
	for s := range lp.reports {
		w.WriteString(s)
		if len(lp.reports) == 0 {
			if err := w.Flush(); err != nil {
				lp.fail(fmt.Errorf("writing the report: %w", err))
				for range lp.reports { // keep callbacks from blocking
				}
				return
			}
		}
	}
}
