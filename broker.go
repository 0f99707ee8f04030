package folio

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/partition"
	"github.com/foliolog/folio/topic"
	"github.com/foliolog/folio/vfs"
)

// Broker owns one data directory: its topics and their partitions' logs,
// the directory lock, the checkpoint file and the clean-shutdown marker.
// Producers and consumers are made from it. All methods are safe for
// concurrent use. See the package documentation for the model.
type Broker struct {
	dir      string
	opts     Options
	fs       vfs.FS
	logger   *slog.Logger
	metrics  Metrics
	lock     *dirLock // nil when read-only
	catalog  *topic.Catalog
	caps     *log.ResourceCaps
	readOnly bool
	// cleaner compacts every partition of the topics whose cleanup policy
	// compacts, so that Options.Cleaner bounds the memory and concurrency
	// of all cleaning. Nil for a read-only Broker, which never writes.
	cleaner *log.Cleaner
	// snapshots is where the partitions keep their producer-state
	// snapshots.
	snapshots snapshotDir
	// groups is the consumer-group state (group.go), from the first group
	// call (or Open, when the offsets topic exists) until Close.
	groups brokerGroups
	// cluster is the replication wiring (cluster.go); nil for one broker
	// and for a read-only Broker.
	cluster *cluster

	// topicsMu serialises topic changes (create, delete, add partitions)
	// with each other and with Close, and is held while the partitions'
	// logs open or close for them. Readers of the topic set do not take it:
	// they load topics, a copy-on-write map replaced under topicsMu.
	topicsMu sync.Mutex
	topics   atomic.Pointer[map[string]*topicState]
	// topicsGen counts replacements of topics, so that producers can cache
	// a lookup and know when it went stale.
	topicsGen atomic.Uint64

	// markerMu guards markerPresent and serialises the removal of the
	// clean-shutdown marker that precedes the first write of a session.
	markerMu      sync.Mutex
	markerPresent bool

	// checkpointMu serialises writes of the checkpoint file (the periodic
	// one against Close's).
	checkpointMu   sync.Mutex
	checkpoints    atomic.Int64
	lastCheckpoint atomic.Int64 // unix nanoseconds of the last successful write

	// clientsMu guards producers and consumers: the clients Close closes
	// and Stats reports.
	clientsMu     sync.Mutex
	producers     map[*Producer]struct{}
	consumers     map[*Consumer]struct{}
	nextConsumer  int64
	producerBlock atomic.Int64 // produce calls that waited for buffer memory

	closed atomic.Bool
	quit   chan struct{}
	wg     sync.WaitGroup
}

// topicState is one topic as the Broker serves it. It is immutable once
// published; AddPartitions publishes a new one that shares the old
// partitions.
type topicState struct {
	info  topic.Info
	parts []*brokerPart
}

// Open opens the data directory dir, creating it (and initializing an empty
// directory) if needed, and opens every topic's partitions. It takes the
// directory's lock: a second Open of the same directory, in this process or
// another, fails with ErrDirLocked naming the holder. A directory written
// by an unknown format version, or one that holds other files and no
// FormatFile, is refused with ErrUnknownFormat and left untouched.
//
// After an unclean shutdown (no clean-shutdown marker) each partition scans
// its segments from its checkpointed recovery point and cuts a torn tail;
// Options.Logger hears what was cut. opts nil means defaults; with
// opts.ReadOnly set Open behaves as OpenReadOnly.
func Open(dir string, opts *Options) (*Broker, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.ReadOnly {
		return openReadOnly(dir, o)
	}
	if _, err := o.FS.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := o.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("folio: creating data directory %s: %w", dir, err)
		}
		// The new directory's own entry must survive a power cut, or the
		// files made durable in it would vanish with it.
		parent := filepath.Dir(filepath.Clean(dir))
		if err := o.FS.SyncDir(parent); err != nil {
			return nil, fmt.Errorf("folio: syncing %s after creating %s: %w", parent, dir, err)
		}
	}
	lk, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	b, err := open(dir, o, lk)
	if err != nil {
		_ = lk.unlock()
		return nil, err
	}
	return b, nil
}

// OpenReadOnly opens the data directory dir for reading, without its lock,
// so a tool can inspect a directory a live Broker is writing. It writes
// nothing: no recovery, no checkpoint, no marker; every layer below runs on
// a file layer that refuses changes. Topic changes and produce fail with
// ErrReadOnly; consumers work, and see each partition as it was at open, up
// to its last complete batch. The directory must exist and be a Folio data
// directory. opts nil means defaults.
func OpenReadOnly(dir string, opts *Options) (*Broker, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	return openReadOnly(dir, o)
}

func openReadOnly(dir string, o Options) (*Broker, error) {
	o.ReadOnly = true
	if _, err := o.FS.Stat(dir); err != nil {
		return nil, fmt.Errorf("folio: data directory %s: %w", dir, err)
	}
	o.FS = readOnlyFS{o.FS}
	return open(dir, o, nil)
}

func open(dir string, o Options, lk *dirLock) (_ *Broker, retErr error) {
	b := &Broker{
		dir:       filepath.Clean(dir),
		opts:      o,
		fs:        o.FS,
		logger:    o.Logger,
		metrics:   o.Metrics,
		lock:      lk,
		readOnly:  o.ReadOnly,
		caps:      log.NewResourceCaps(o.MaxOpenSegments),
		producers: map[*Producer]struct{}{},
		consumers: map[*Consumer]struct{}{},
		quit:      make(chan struct{}),
	}
	if b.metrics == nil {
		b.metrics = NoMetrics{}
	}
	b.snapshots = snapshotDir{fs: b.fs, dir: b.dir}
	fresh, err := checkFormat(b.fs, b.dir, !b.readOnly)
	if err != nil {
		return nil, err
	}
	if !b.readOnly {
		// Before the partitions: their logs register with it as they open.
		if b.cleaner, err = log.NewCleaner(o.Cleaner); err != nil {
			return nil, fmt.Errorf("folio: Options.Cleaner: %w: %w", ErrInvalidConfig, err)
		}
		defer func() {
			if retErr != nil {
				_ = b.cleaner.Close()
			}
		}()
	}
	clean, cleanAt, damaged := readCleanMarker(b.fs, b.dir)
	if damaged != nil {
		b.logger.Warn("folio: clean-shutdown marker unreadable; recovering as after a crash", "dir", b.dir, "err", damaged)
	}
	b.markerPresent = clean
	ckpt, err := readCheckpoint(b.fs, b.dir)
	if err != nil {
		return nil, err
	}
	cat, err := topic.OpenCatalog(b.dir, &topic.Options{FS: b.fs, Now: o.Now, ReadOnly: b.readOnly})
	if err != nil {
		return nil, err
	}
	b.catalog = cat
	// A read-only catalog only reports what a writer would repair (a
	// create in progress in the live writer looks like that): nothing to
	// warn about.
	if rec := cat.Recovery(); !b.readOnly && (len(rec.RemovedOrphans)+len(rec.RemovedDeletes)+len(rec.RecreatedDirs) > 0 || rec.RemovedTemp) {
		b.logger.Warn("folio: topic catalog repaired the data directory", "dir", b.dir,
			"removedOrphans", rec.RemovedOrphans, "removedDeletes", rec.RemovedDeletes,
			"recreated", rec.RecreatedDirs, "removedTemp", rec.RemovedTemp)
	}
	infos, err := cat.List()
	if err != nil {
		_ = cat.Close()
		return nil, err
	}
	if o.Cluster != nil && !b.readOnly {
		// Before the partitions: the replicated ones open with its hooks.
		if b.cluster, err = newCluster(b, o.Cluster); err != nil {
			_ = cat.Close()
			return nil, err
		}
		if err := b.cluster.adoptStandalone(infos); err != nil {
			_ = cat.Close()
			return nil, err
		}
	}
	topics, err := b.openTopics(infos, ckpt, clean)
	if err != nil {
		_ = cat.Close()
		return nil, b.limitHint(err)
	}
	b.topics.Store(&topics)
	if !b.readOnly {
		b.cleanSnapshots(topics)
		// Consumer groups (group.go) load their committed offsets now,
		// so the first group call is served from the last commit.
		if err := b.groups.open(b); err != nil {
			_ = b.closeGroups()
			for _, ts := range topics {
				for _, p := range ts.parts {
					_ = p.Close()
				}
			}
			_ = cat.Close()
			return nil, err
		}
	}
	b.logger.Info("folio: opened data directory", "dir", b.dir, "fresh", fresh, "clean", clean,
		"cleanAt", cleanAt, "topics", len(topics), "readOnly", b.readOnly)
	if !b.readOnly && o.CheckpointInterval > 0 {
		b.goFunc(b.checkpointLoop)
	}
	if b.cluster != nil {
		b.cluster.start()
	}
	return b, nil
}

// openTopics opens every partition's log, in parallel across partitions
// (recovery after a crash scans, and one partition's scan should not wait
// for another's). On error it closes what it opened.
func (b *Broker) openTopics(infos []topic.Info, ckpt map[partKey]checkpointEntry, clean bool) (map[string]*topicState, error) {
	topics := make(map[string]*topicState, len(infos))
	type job struct {
		ts *topicState
		p  int32
	}
	var jobs []job
	for _, in := range infos {
		ts := &topicState{info: in, parts: make([]*brokerPart, in.Config.Partitions)}
		topics[in.Name] = ts
		for p := int32(0); p < in.Config.Partitions; p++ {
			jobs = append(jobs, job{ts, p})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 8, max(len(jobs), 1))
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex // guards first, failed
		first  = -1       // the job of the first failure, in open order
		failed []error    // by job
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(jobs)) {
					return
				}
				j := jobs[i]
				e, ok := ckpt[partKey{j.ts.info.ID, j.p}]
				// A read-only Broker never recovers: it must not cut the
				// tail a live writer is appending to. It reads what is
				// there up to the last complete batch.
				st := log.State{Clean: (clean && ok) || b.readOnly}
				if ok {
					st.RecoveryPoint, st.LogStartOffset = e.recoveryPoint, e.logStartOffset
					st.FirstDirtyOffset = e.firstDirtyOffset
					st.HighWatermark = e.highWatermark
				}
				p, err := b.openPartition(j.ts.info, j.p, st)
				if err != nil {
					errMu.Lock()
					if failed == nil {
						failed = make([]error, len(jobs))
					}
					failed[i] = err
					if first < 0 || int(i) < first {
						first = int(i)
					}
					errMu.Unlock()
					continue
				}
				j.ts.parts[j.p] = p
			}
		}()
	}
	wg.Wait()
	if first >= 0 {
		for _, ts := range topics {
			for _, p := range ts.parts {
				if p != nil {
					_ = p.Close()
				}
			}
		}
		return nil, openFailure(failed, first)
	}
	return topics, nil
}

// openFailure is the error of an Open whose partitions failed to open: the
// first failure in open order (topic, then partition), which names its
// file, and how many others failed. When a limit such as the open-files one
// is reached, hundreds of partitions fail alike, and one line naming each
// helped nobody.
func openFailure(failed []error, first int) error {
	n := 0
	for _, err := range failed {
		if err != nil {
			n++
		}
	}
	if n == 1 {
		return failed[first]
	}
	return fmt.Errorf("%w (and %d more partitions failed to open)", failed[first], n-1)
}

// openPartition opens one partition: its log on the Broker's file layer,
// with every fsync timed for Stats and Metrics.
func (b *Broker) openPartition(in topic.Info, p int32, st log.State) (*brokerPart, error) {
	times := &syncTimes{}
	if _, none := b.metrics.(NoMetrics); !none {
		m, name := b.metrics, in.Name
		times.onSync = func(d time.Duration) { m.Fsynced(name, p, d) }
	}
	opts := b.partitionOptions(in, p)
	part, err := partition.Open(timedFS{FS: b.fs, times: times}, b.catalog.PartitionDir(in.Name, p), in, p, st, opts)
	if err != nil {
		return nil, fmt.Errorf("folio: %w", err)
	}
	if h, ok := opts.Replication.(replHook); ok {
		h.rp.part.Store(part)
	}
	return &brokerPart{Partition: part, syncs: times}, nil
}

// partitionOptions are the options of partition p of topic in: what the
// Broker shares between its partitions, and the partition's snapshot file.
func (b *Broker) partitionOptions(in topic.Info, p int32) *partition.Options {
	var repl partition.Replication
	if b.cluster != nil {
		repl = b.cluster.replication(in, p)
	}
	return &partition.Options{
		Replication:            repl,
		Logger:                 b.logger,
		Metrics:                b.metrics,
		Snapshots:              snapshotFile{d: &b.snapshots, name: snapshotName(in.ID, p)},
		Caps:                   b.caps,
		Cleaner:                b.cleaner,
		RetentionCheckInterval: b.opts.RetentionCheckInterval,
		BeforeFirstWrite:       b.beforeFirstWrite,
		Now:                    b.opts.Now,
		ReadOnly:               b.readOnly,
	}
}

// beforeFirstWrite is every log's BeforeFirstWrite hook: the clean-shutdown
// marker must be gone, durably, before anything in the directory changes,
// or a crash after the change would be mistaken for a clean shutdown and
// skip recovery.
func (b *Broker) beforeFirstWrite() error {
	if b.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, b.dir)
	}
	b.markerMu.Lock()
	defer b.markerMu.Unlock()
	if !b.markerPresent {
		return nil
	}
	if err := removeDurably(b.fs, b.dir, CleanShutdownFile); err != nil {
		return err
	}
	b.markerPresent = false
	return nil
}

// goFunc runs fn on a goroutine that Close waits for.
func (b *Broker) goFunc(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// checkpointLoop writes the checkpoint file every CheckpointInterval.
func (b *Broker) checkpointLoop() {
	t := time.NewTicker(b.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
			if err := b.Checkpoint(); err != nil && !errors.Is(err, ErrClosed) {
				b.logger.Error("folio: writing checkpoint", "dir", b.dir, "err", err)
			}
			b.expireProducers(b.opts.Now())
		}
	}
}

// expireProducers drops the state of idempotent producers whose last batch
// is older than the expiration (topic.DefaultProducerExpiration, Kafka's
// producer.id.expiration.ms), as Kafka does periodically.
func (b *Broker) expireProducers(now time.Time) int {
	n := 0
	for _, p := range b.allPartitions() {
		n += p.ExpireProducers(now)
	}
	return n
}

// Checkpoint writes every partition's recovery point, log start offset and
// cleaner checkpoint to CheckpointFile now (the Broker also does so every
// Options.CheckpointInterval and at Close). A later recovery after a crash
// scans only what lies beyond these recovery points.
func (b *Broker) Checkpoint() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if b.readOnly {
		return ErrReadOnly
	}
	return b.writeCheckpoint(b.allPartitions())
}

func (b *Broker) writeCheckpoint(parts []*brokerPart) error {
	b.checkpointMu.Lock()
	defer b.checkpointMu.Unlock()
	start := time.Now()
	entries := make([]checkpointEntry, 0, len(parts))
	for _, p := range parts {
		st := p.Checkpoint()
		e := checkpointEntry{
			topic: p.Topic(), id: p.TopicID(), partition: p.Index(),
			recoveryPoint: st.RecoveryPoint, logStartOffset: st.LogStartOffset,
			highWatermark: st.HighWatermark,
		}
		if p.Config().Cleanup.Compacts() {
			// Only a compacted log has a cleaner checkpoint (as in Kafka).
			e.firstDirtyOffset = st.FirstDirtyOffset
		}
		entries = append(entries, e)
	}
	err := writeMetaFile(b.fs, b.dir, CheckpointFile, encodeCheckpoint(entries))
	b.metrics.Checkpointed(len(entries), time.Since(start), err)
	if err == nil {
		b.checkpoints.Add(1)
		b.lastCheckpoint.Store(time.Now().UnixNano())
	}
	return err
}

// allPartitions lists every partition of every topic.
func (b *Broker) allPartitions() []*brokerPart {
	var out []*brokerPart
	for _, ts := range *b.topics.Load() {
		out = append(out, ts.parts...)
	}
	return out
}

// Close closes the producers (each first appends what it buffered) and
// consumers made from the Broker, then every partition's log (each fsyncs
// what it holds; a compaction pass under way is abandoned, its files
// removed), stops the log cleaner, writes the checkpoint file, and, if all
// of that succeeded, the clean-shutdown marker, so that the next Open skips
// recovery. It releases the directory lock last. Close is idempotent;
// later calls return ErrClosed.
func (b *Broker) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	var errs []error
	b.clientsMu.Lock()
	producers := make([]*Producer, 0, len(b.producers))
	for p := range b.producers {
		producers = append(producers, p)
	}
	consumers := make([]*Consumer, 0, len(b.consumers))
	for c := range b.consumers {
		consumers = append(consumers, c)
	}
	b.clientsMu.Unlock()
	for _, p := range producers {
		if err := p.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, c := range consumers {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	if b.cluster != nil {
		// A controlled shutdown: leaderships handed over, the ISRs left,
		// followers stopped, before the logs close.
		b.cluster.stop()
	}
	// Group members and the coordinator stop before the logs they write
	// to close (group.go).
	if err := b.closeGroups(); err != nil {
		errs = append(errs, err)
	}
	close(b.quit)
	b.wg.Wait()

	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	parts := b.allPartitions()
	cleanLogs := true
	for _, p := range parts {
		if err := p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("folio: closing partition %s: %w", p, err))
		}
		if !p.Checkpoint().Clean {
			cleanLogs = false
		}
	}
	// After the logs: each closed log has left the cleaner and waited out
	// its pass, so stopping the workers abandons nothing of theirs.
	if b.cleaner != nil {
		if err := b.cleaner.Close(); err != nil && !errors.Is(err, log.ErrClosed) {
			errs = append(errs, fmt.Errorf("folio: closing the log cleaner: %w", err))
		}
	}
	if !b.readOnly {
		if err := b.writeSnapshots(parts); err != nil {
			errs = append(errs, err)
		}
		if err := b.writeCheckpoint(parts); err != nil {
			errs = append(errs, err)
		} else if cleanLogs && len(errs) == 0 {
			b.markerMu.Lock()
			err := writeMetaFile(b.fs, b.dir, CleanShutdownFile, encodeCleanMarker(b.opts.Now()))
			if err == nil {
				b.markerPresent = true
			}
			b.markerMu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := b.catalog.Close(); err != nil {
		errs = append(errs, err)
	}
	if b.lock != nil {
		if err := b.lock.unlock(); err != nil {
			errs = append(errs, fmt.Errorf("folio: unlocking %s: %w", b.dir, err))
		}
	}
	return errors.Join(errs...)
}

// Dir returns the data directory.
func (b *Broker) Dir() string { return b.dir }

// ReadOnly reports whether the Broker was opened read-only.
func (b *Broker) ReadOnly() bool { return b.readOnly }

// usable reports why the Broker refuses a write, if it does.
func (b *Broker) writable() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if b.readOnly {
		return ErrReadOnly
	}
	return nil
}

// lookup returns a topic's partition.
func (b *Broker) lookup(name string, p int32) (*brokerPart, error) {
	ts, ok := (*b.topics.Load())[name]
	if !ok && b.cluster != nil && b.cluster.ensureTopic(name) {
		ts, ok = (*b.topics.Load())[name]
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if p < 0 || int(p) >= len(ts.parts) {
		return nil, fmt.Errorf("%w: %s-%d (the topic has %d)", ErrUnknownPartition, name, p, len(ts.parts))
	}
	return ts.parts[p], nil
}
