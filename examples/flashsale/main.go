// Command flashsale plays the burst the README's motivation describes: a
// flash sale opens, a burst of orders lands in the topic "orders" far
// faster than the services downstream can handle them, and each service
// drains the topic at its own pace. Folio absorbs the peak on disk: the
// producers are never held back, memory stays flat, and a running picture
// shows each service's backlog per partition shrinking.
//
//	go run ./examples/flashsale                     # ~10 s: 100,000 orders
//	go run ./examples/flashsale -orders 1000000 -payments 200000 -shipping 100000
//
// Two services read every order (each is its own consumer, so both see all
// of them, as two consumer groups would): "payments", the faster one, and
// "shipping". Each checks that it received every order of the sale exactly
// once, in offset order per partition.
//
// The data directory is a temporary one, removed at the end, unless -dir
// names one; a rerun on the same directory reads only its own orders (it
// starts at the end offsets it finds).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/foliolog/folio"
)

const topicName = "orders"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "flashsale:", err)
	}
	os.Exit(exitCode(err))
}

// usageError is a command line that cannot run.
type usageError struct{ error }

// exitCode is 0 for success and for -h, 2 for a bad command line, 1 for
// a run that failed.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// config is the command line.
type config struct {
	dir        string
	orders     int
	partitions int
	producers  int
	payments   float64 // orders per second
	shipping   float64
	refresh    time.Duration
	flush      string
	plain      bool
}

// parseConfig parses the command line. -h prints the flags on errOut and
// returns flag.ErrHelp; every other error is a usageError of one line.
func parseConfig(args []string, errOut io.Writer) (config, error) {
	var c config
	fl := flag.NewFlagSet("flashsale", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() {} // the flag package calls it on errors too
	fl.StringVar(&c.dir, "dir", "", "data directory (default: a temporary one, removed at the end)")
	fl.IntVar(&c.orders, "orders", 100_000, "orders in the burst")
	fl.IntVar(&c.partitions, "partitions", 4, "partitions of the topic when it is created")
	fl.IntVar(&c.producers, "producers", 4, "goroutines producing the burst, as fast as they can")
	fl.Float64Var(&c.payments, "payments", 25_000, "orders per second the payments service handles")
	fl.Float64Var(&c.shipping, "shipping", 12_000, "orders per second the shipping service handles")
	fl.DurationVar(&c.refresh, "refresh", 250*time.Millisecond, "how often the backlog picture is redrawn")
	fl.StringVar(&c.flush, "flush", "sync", "the topic's flush policy when it is created: sync, none, interval:<d>, every:<n>")
	fl.BoolVar(&c.plain, "plain", false, "print each picture below the last instead of redrawing it (the default when stdout is not a terminal)")
	err := fl.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(errOut, "usage: go run ./examples/flashsale [flags]\n\nA burst of orders, absorbed by a topic and drained by two slower services.\n\nFlags:")
		fl.SetOutput(errOut)
		fl.PrintDefaults()
		return c, err
	case err != nil:
		return c, usageError{fmt.Errorf("%v (run with -h for the flags)", err)}
	case fl.NArg() > 0:
		return c, usageError{fmt.Errorf("unexpected argument %q", fl.Arg(0))}
	case c.orders < 1:
		return c, usageError{fmt.Errorf("-orders %d: want at least 1", c.orders)}
	case c.partitions < 1:
		return c, usageError{fmt.Errorf("-partitions %d: want at least 1", c.partitions)}
	case c.producers < 1:
		return c, usageError{fmt.Errorf("-producers %d: want at least 1", c.producers)}
	case c.payments <= 0 || c.shipping <= 0:
		return c, usageError{fmt.Errorf("-payments and -shipping must be positive rates")}
	case c.refresh <= 0:
		return c, usageError{fmt.Errorf("-refresh %v: want a positive duration", c.refresh)}
	}
	if err := (&folio.TopicConfig{}).Set("flush", c.flush); err != nil {
		return c, usageError{fmt.Errorf("-flush: %w", err)}
	}
	return c, nil
}

// run is the program, with its arguments and output as parameters: the
// pictures and the summary go to out, the help to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) (err error) {
	c, err := parseConfig(args, errOut)
	if err != nil {
		return err
	}
	if c.dir == "" {
		tmp, err := os.MkdirTemp("", "flashsale-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		c.dir = tmp
	}
	b, err := folio.Open(c.dir, nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); err == nil {
			err = cerr
		}
	}()
	info, err := ensureTopic(b, c)
	if err != nil {
		return err
	}
	start := make([]int64, len(info.Partitions))
	for i, p := range info.Partitions {
		start[i] = p.LogEndOffset
	}
	fmt.Fprintf(out, "flash sale: %d orders into %q (%d partitions, flush %s); payments handles %.0f/s, shipping %.0f/s\n",
		c.orders, topicName, len(start), info.Config.Flush, c.payments, c.shipping)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &sale{b: b, c: c, start: start, out: out}
	s.services = []*service{
		{name: "payments", rate: c.payments},
		{name: "shipping", rate: c.shipping},
	}
	for _, sv := range s.services {
		if err := sv.open(b, start); err != nil {
			return err
		}
	}
	// Every goroutine is owned here: services and display are stopped and
	// waited for before the Broker closes.
	var wg sync.WaitGroup
	errs := make(chan error, len(s.services)+1)
	s.t0 = time.Now()
	for _, sv := range s.services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sv.drain(ctx, s.t0, c.orders, start); err != nil {
				errs <- fmt.Errorf("%s: %w", sv.name, err)
				cancel()
			}
		}()
	}
	displayDone := make(chan struct{})
	go func() {
		defer close(displayDone)
		s.display(ctx)
	}()

	burstErr := s.burst(ctx)
	if burstErr != nil {
		cancel()
	}
	wg.Wait()
	cancel()
	<-displayDone
	for _, sv := range s.services {
		sv.consumer.Close()
	}
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if burstErr != nil {
		return burstErr
	}
	for _, sv := range s.services {
		if sv.done.Load() == 0 {
			return fmt.Errorf("interrupted: %s handled %d of %d orders", sv.name, sv.handled.Load(), c.orders)
		}
	}
	s.summary()
	return nil
}

// ensureTopic creates the topic, or finds it from an earlier run.
func ensureTopic(b *folio.Broker, c config) (folio.TopicInfo, error) {
	cfg := folio.TopicConfig{Partitions: int32(c.partitions)}
	if err := cfg.Set("flush", c.flush); err != nil {
		return folio.TopicInfo{}, fmt.Errorf("-flush: %w", err)
	}
	info, err := b.CreateTopic(topicName, cfg)
	if errors.Is(err, folio.ErrTopicExists) {
		return b.DescribeTopic(topicName)
	}
	return info, err
}

// sale is one run: the burst, the services and the picture.
type sale struct {
	b        *folio.Broker
	c        config
	start    []int64
	out      io.Writer
	services []*service
	t0       time.Time

	produced  atomic.Int64
	burstTook atomic.Int64 // nanoseconds; 0 until the burst is acknowledged
	peakHeap  atomic.Uint64
	peak      []int64 // per service: the largest total backlog drawn
	scale     int64   // the largest backlog of one partition drawn: a full bar
	frameRows int     // lines of the last frame, for redrawing in place
}

// burst produces the orders from several goroutines as fast as they can
// and waits until every one is acknowledged.
func (s *sale) burst(ctx context.Context) error {
	p, err := s.b.NewProducer(nil)
	if err != nil {
		return err
	}
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		failed  error
	)
	fail := func(err error) { errOnce.Do(func() { failed = err }) }
	per := (s.c.orders + s.c.producers - 1) / s.c.producers
	for g := 0; g < s.c.producers; g++ {
		from, to := g*per, min((g+1)*per, s.c.orders)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for i := from; i < to && ctx.Err() == nil; i++ {
				customer := "customer-" + strconv.Itoa(rng.IntN(5000))
				value := fmt.Sprintf(`{"order":%d,"customer":%q,"amount_cents":%d}`, i, customer, 100+rng.IntN(50_000))
				rec := &folio.Record{Topic: topicName, Key: []byte(customer), Value: []byte(value)}
				p.ProduceAsync(ctx, rec, func(_ *folio.Record, err error) {
					if err != nil {
						fail(err)
						return
					}
					s.produced.Add(1)
				})
			}
		}()
	}
	wg.Wait()
	if err := p.Flush(ctx); err != nil && failed == nil {
		fail(err)
	}
	if err := p.Close(); err != nil && failed == nil {
		fail(err)
	}
	s.burstTook.Store(int64(time.Since(s.t0)))
	if failed != nil && ctx.Err() == nil {
		return fmt.Errorf("producing the burst: %w", failed)
	}
	return nil
}

// service is one downstream consumer that handles orders at a fixed rate.
type service struct {
	name     string
	rate     float64
	consumer *folio.Consumer
	handled  atomic.Int64
	done     atomic.Int64 // nanoseconds from the burst's start to the last order
}

func (sv *service) open(b *folio.Broker, start []int64) error {
	c, err := b.NewConsumer(&folio.ConsumerOptions{Name: sv.name, MaxPollRecords: 100})
	if err != nil {
		return err
	}
	as := make([]folio.Assignment, len(start))
	for p, off := range start {
		as[p] = folio.Assignment{Topic: topicName, Partition: int32(p), Start: folio.AtOffset(off)}
	}
	if err := c.Assign(as...); err != nil {
		c.Close()
		return err
	}
	sv.consumer = c
	return nil
}

// drain handles orders at the service's rate until it has all of them,
// checking that each partition's orders come once and in offset order.
func (sv *service) drain(ctx context.Context, t0 time.Time, orders int, start []int64) error {
	next := append([]int64(nil), start...)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for sv.handled.Load() < int64(orders) {
		recs, err := sv.consumer.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, r := range recs {
			if r.Offset != next[r.Partition] {
				return fmt.Errorf("partition %d: got offset %d, expected %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
		}
		n := sv.handled.Add(int64(len(recs)))
		// Pace the service: n orders take n/rate seconds of work.
		if wait := time.Until(t0.Add(time.Duration(float64(n) / sv.rate * float64(time.Second)))); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
		}
	}
	if got := sv.handled.Load(); got != int64(orders) {
		return fmt.Errorf("handled %d orders, the sale had %d", got, orders)
	}
	sv.done.Store(int64(time.Since(t0)))
	return nil
}

// display redraws the backlog picture every refresh until every service
// is done, then draws the last one.
func (s *sale) display(ctx context.Context) {
	s.peak = make([]int64, len(s.services))
	t := time.NewTicker(s.c.refresh)
	defer t.Stop()
	for {
		finished := true
		for _, sv := range s.services {
			finished = finished && sv.done.Load() > 0
		}
		s.frame()
		if finished {
			return
		}
		select {
		case <-ctx.Done():
			s.frame() // the state it ended in
			return
		case <-t.C:
		}
	}
}

const barWidth = 24

// frame draws one picture: per partition the records written and each
// service's backlog (written but not yet taken), with bars scaled to the
// largest backlog seen so far, so they shrink as the services catch up.
func (s *sale) frame() {
	st := s.b.Stats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > s.peakHeap.Load() {
		s.peakHeap.Store(ms.HeapInuse)
	}
	backlog := make([][]int64, len(s.services))
	ends := make([]int64, len(s.start))
	for i := range backlog {
		backlog[i] = make([]int64, len(s.start))
	}
	for _, ps := range st.Partitions {
		if ps.Topic != topicName || int(ps.Partition) >= len(s.start) {
			continue
		}
		ends[ps.Partition] = ps.HighWatermark - s.start[ps.Partition]
		for _, cl := range ps.Consumers {
			for i, sv := range s.services {
				if cl.Consumer == sv.name {
					backlog[i][ps.Partition] = cl.Lag
				}
			}
		}
	}
	for i := range s.services {
		total := int64(0)
		for _, v := range backlog[i] {
			total += v
			s.scale = max(s.scale, v)
		}
		s.peak[i] = max(s.peak[i], total)
	}
	scale := max(s.scale, 1)

	var f strings.Builder
	burst := "producing"
	if d := time.Duration(s.burstTook.Load()); d > 0 {
		burst = fmt.Sprintf("burst done in %.2fs", d.Seconds())
	}
	fmt.Fprintf(&f, "t=%5.1fs  orders written %d/%d (%s)  heap %s\n",
		time.Since(s.t0).Seconds(), s.produced.Load(), s.c.orders, burst, mib(ms.HeapInuse))
	fmt.Fprintf(&f, "%-9s %9s", "partition", "written")
	for _, sv := range s.services {
		fmt.Fprintf(&f, "   %-*s", barWidth+9, sv.name+" backlog")
	}
	f.WriteByte('\n')
	for p := range s.start {
		fmt.Fprintf(&f, "%-9d %9d", p, ends[p])
		for i := range s.services {
			fmt.Fprintf(&f, "   %8d %s", backlog[i][p], bar(backlog[i][p], scale))
		}
		f.WriteByte('\n')
	}
	fmt.Fprintf(&f, "%-9s %9s", "handled", "")
	for _, sv := range s.services {
		fmt.Fprintf(&f, "   %8d %-*s", sv.handled.Load(), barWidth, "")
	}
	f.WriteByte('\n')

	if s.redraw() && s.frameRows > 0 {
		fmt.Fprintf(s.out, "\033[%dA\033[J", s.frameRows) // back to the last frame's first line, clear below
	} else if s.frameRows > 0 {
		fmt.Fprintln(s.out)
	}
	io.WriteString(s.out, f.String())
	s.frameRows = strings.Count(f.String(), "\n")
}

// redraw reports whether frames replace each other in place: only on a
// terminal, where the cursor can move back.
func (s *sale) redraw() bool {
	if s.c.plain {
		return false
	}
	f, ok := s.out.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func bar(v, scale int64) string {
	n := int(v * barWidth / scale)
	if v > 0 && n == 0 {
		n = 1
	}
	return strings.Repeat("█", n) + strings.Repeat("·", barWidth-n)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// summary says what the run showed.
func (s *sale) summary() {
	took := time.Duration(s.burstTook.Load())
	st := s.b.Stats()
	fmt.Fprintf(s.out, "\nburst: %d orders written in %.2fs (%.0f orders/s); produce calls that waited for memory: %d\n",
		s.produced.Load(), took.Seconds(), float64(s.produced.Load())/took.Seconds(), st.ProduceBlocked)
	for i, sv := range s.services {
		d := time.Duration(sv.done.Load())
		fmt.Fprintf(s.out, "%s: handled all %d orders in %.2fs (%.0f/s); peak backlog %d orders, held on disk\n",
			sv.name, sv.handled.Load(), d.Seconds(), float64(sv.handled.Load())/d.Seconds(), s.peak[i])
	}
	fmt.Fprintf(s.out, "peak heap in use %s\n", mib(s.peakHeap.Load()))
	fmt.Fprintf(s.out, "every service received every order once, in offset order per partition\n")
}
