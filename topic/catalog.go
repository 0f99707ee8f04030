package topic

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foliolog/folio/errs"
	"github.com/foliolog/folio/vfs"
)

// DefaultProducerIDBlock is how many producer ids one catalog write
// reserves (Kafka's ProducerIdManager hands out blocks of 1000 too).
const DefaultProducerIDBlock = 1000

// Options configures a Catalog. The zero value (and nil) gives defaults.
type Options struct {
	// FS is the file layer. Default vfs.Default, the real file system;
	// tests pass a faultfs.FS.
	FS vfs.FS
	// ProducerIDBlock is how many producer ids are reserved per catalog
	// write: AllocateProducerID writes the catalog once per block, and a
	// crash forfeits at most the rest of a block. Default
	// DefaultProducerIDBlock.
	ProducerIDBlock int64
	// Now is the clock that stamps a topic's creation. Default time.Now.
	Now func() time.Time
	// ReadOnly opens the catalog for reading only, beside a live writer
	// that holds the data directory (the CLI's read commands). Open then
	// writes, renames, removes and syncs nothing: a missing data directory
	// or catalog file is an error wrapping ErrNoCatalog instead of being
	// created, leftovers of crashes stay where they are (Recovery lists
	// them), and every method that would change the catalog returns
	// ErrReadOnly. The Catalog is a snapshot of the file as it was at
	// Open; it does not follow the writer's later changes. Default false.
	ReadOnly bool
}

func (o *Options) validate() error {
	if o.ProducerIDBlock < 0 {
		return fmt.Errorf("%w: Options.ProducerIDBlock %d, want a positive count", ErrInvalidConfig, o.ProducerIDBlock)
	}
	return nil
}

// Info describes one topic.
type Info struct {
	Name string
	// ID is this incarnation's id; it changes if the topic is deleted and
	// created again.
	ID ID
	// Internal marks Folio's own topics (names starting with "__").
	Internal bool
	// Created is when the topic was created, to the millisecond.
	Created time.Time
	// Config is the topic's configuration with defaults spelled out.
	Config Config
}

// Recovery reports what OpenCatalog repaired in the data directory. For a
// catalog opened with Options.ReadOnly it reports what a writable open
// would repair, and nothing was changed; beside a live writer it may then
// also list the directories of a create, grow or delete in progress.
type Recovery struct {
	// RemovedOrphans are partition directories the catalog does not name,
	// left by a create that crashed before its catalog write (or a delete
	// that crashed before renaming them), which Open removed.
	RemovedOrphans []string
	// RemovedDeletes are "<topic>-<partition>.<id>-delete" directories of
	// deletes that crashed before removing them, which Open removed.
	RemovedDeletes []string
	// RemovedTemp is set if Open removed a temporary catalog file left by
	// a write that crashed before its rename.
	RemovedTemp bool
	// RecreatedDirs are partition directories the catalog names that were
	// missing (removed from outside Folio: the protocol never loses one),
	// which Open created empty.
	RecreatedDirs []string
}

// Catalog is the durable list of a data directory's topics and their
// configurations, plus the producer-id high-water mark. Every change is
// one write of the catalog file (tmp + fsync + rename + fsync(dir)); the
// partition directories are created and made durable before the catalog
// names them, and removed only after it stopped naming them, so a crash at
// any point leaves the old state or the new one, and Open removes what a
// crash left behind. One Catalog per data directory (the Broker's lock
// file keeps a second process out), beside any number of read-only ones
// (Options.ReadOnly). It is safe for concurrent use.
type Catalog struct {
	fs       vfs.FS
	dir      string
	idBlock  int64
	now      func() time.Time
	readOnly bool
	recovery Recovery

	// catalogMu guards the fields below, and is held across every write of
	// the catalog file and of partition directories so that they happen in
	// one order.
	catalogMu sync.Mutex
	state     catalogState // what the catalog file holds
	pidNext   int64        // next producer id; the file's high-water mark bounds it
	failed    error        // set when a write's outcome is unknown; see ErrFailed
	closed    bool
}

// OpenCatalog opens the catalog of the data directory dir, creating the
// directory and an empty catalog if there is none. It finishes what a crash
// interrupted: it removes a temporary catalog file, partition directories
// the catalog does not name and delete-pending directories (see Recovery).
// A catalog file that fails its checksum or does not decode is an error
// wrapping ErrCorrupt; so is a missing catalog file beside partition
// directories, since treating it as empty would remove them all.
//
// With Options.ReadOnly it only reads: see there.
func OpenCatalog(dir string, opts *Options) (*Catalog, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.ProducerIDBlock == 0 {
		o.ProducerIDBlock = DefaultProducerIDBlock
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Catalog{fs: o.FS, dir: dir, idBlock: o.ProducerIDBlock, now: o.Now, readOnly: o.ReadOnly}
	if c.readOnly {
		if err := c.openReadOnly(); err != nil {
			return nil, err
		}
		return c, nil
	}
	if err := c.ensureDir(); err != nil {
		return nil, err
	}
	data, err := c.readCatalog()
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := c.refuseStrayPartitions(); err != nil {
			return nil, err
		}
		c.state = catalogState{topics: map[string]Info{}}
		if err := c.writeCatalogLocked(c.state); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if c.state, err = decodeCatalog(data); err != nil {
			return nil, c.decodeErr(err)
		}
	}
	c.pidNext = c.state.nextProducerID
	plan, err := c.planRepair()
	if err != nil {
		return nil, err
	}
	if err := c.repair(plan); err != nil {
		return nil, err
	}
	c.recovery = plan
	return c, nil
}

// A read-only open reads a catalog file that fails its checks this many
// times, pausing readOnlyRetryPause times the attempt number in between,
// before it reports ErrCorrupt. The writer replaces the file by rename, so
// a read through one open handle always sees one whole file; the retries
// are for a file system that does not keep that promise (a network file
// system's cache), and cost a truly corrupt catalog only a few
// milliseconds.
const (
	readOnlyAttempts   = 4
	readOnlyRetryPause = 5 * time.Millisecond
)

// openReadOnly is OpenCatalog for Options.ReadOnly: it stats, lists and
// reads, and never changes the directory.
func (c *Catalog) openReadOnly() error {
	fi, err := c.fs.Stat(c.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: data directory %s: %w", ErrNoCatalog, c.dir, err)
	case err != nil:
		return fmt.Errorf("topic: data directory %s: %w", c.dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: data directory %s is not a directory", ErrNoCatalog, c.dir)
	}
	for attempt := 1; ; attempt++ {
		data, err := c.readCatalog()
		if errors.Is(err, os.ErrNotExist) {
			// As for a writable open: partition directories without a
			// catalog mean a lost file, not a directory still being set up.
			if err := c.refuseStrayPartitions(); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s: %w", ErrNoCatalog, c.path(CatalogFile), err)
		}
		if err == nil {
			if c.state, err = decodeCatalog(data); err == nil {
				break
			}
			err = c.decodeErr(err)
		}
		if !errors.Is(err, ErrCorrupt) {
			return err
		}
		if attempt == readOnlyAttempts {
			return fmt.Errorf("%w (read %d times)", err, attempt)
		}
		time.Sleep(readOnlyRetryPause * time.Duration(attempt))
	}
	c.pidNext = c.state.nextProducerID
	plan, err := c.planRepair()
	if err != nil {
		return err
	}
	c.recovery = plan
	return nil
}

// refuseReadOnly returns ErrReadOnly for op (on topic name, if not empty)
// on a read-only catalog. It needs no lock: readOnly never changes after
// Open.
func (c *Catalog) refuseReadOnly(op, name string) error {
	if !c.readOnly {
		return nil
	}
	if name != "" {
		op = fmt.Sprintf("%s %q", op, name)
	}
	return fmt.Errorf("%w: %s in %s", ErrReadOnly, op, c.dir)
}

func (c *Catalog) path(name string) string { return filepath.Join(c.dir, name) }

// ensureDir creates the data directory if it is missing, durably: a topic
// whose creation returned must not vanish with a directory entry that was
// never synced.
func (c *Catalog) ensureDir() error {
	var missing []string // from c.dir up to the first that exists
	for d := filepath.Clean(c.dir); ; d = filepath.Dir(d) {
		_, err := c.fs.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("topic: data directory %s: %w", d, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := c.fs.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("topic: creating data directory %s: %w", c.dir, err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := c.fs.SyncDir(filepath.Dir(missing[i])); err != nil {
			return fmt.Errorf("topic: syncing the parent of %s: %w", missing[i], err)
		}
	}
	return nil
}

func (c *Catalog) readCatalog() ([]byte, error) {
	p := c.path(CatalogFile)
	f, err := c.fs.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("topic: opening %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("topic: %s: %w", p, err)
	}
	if fi.Size() > maxCatalogBytes {
		return nil, errs.Corruptf(ErrCorrupt, p, -1, "%d bytes, more than the %d a catalog may have", fi.Size(), maxCatalogBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, fi.Size()), data); err != nil {
		return nil, fmt.Errorf("topic: reading %s: %w", p, err)
	}
	return data, nil
}

// decodeErr names the catalog file in an error of decodeCatalog: a
// corrupt catalog is an *errs.Corruption of the file, a newer format says
// which file it found.
func (c *Catalog) decodeErr(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return errs.Corrupt(ErrCorrupt, c.path(CatalogFile), -1, err)
	}
	return fmt.Errorf("%w (in %s)", err, c.path(CatalogFile))
}

// refuseStrayPartitions runs when there is no catalog file. Every data
// directory gets one (written durably) before its first partition
// directory, so partition directories without it mean the file was lost,
// and removing them as orphans would destroy their data.
func (c *Catalog) refuseStrayPartitions() error {
	entries, err := c.fs.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("topic: listing %s: %w", c.dir, err)
	}
	for _, e := range entries {
		if _, _, ok := ParseDirName(e.Name()); ok && e.IsDir() {
			return errs.Corruptf(ErrCorrupt, c.path(CatalogFile), -1,
				"missing, but partition directory %s exists; refusing to treat the catalog as empty", e.Name())
		}
	}
	return nil
}

// planRepair lists what crashes left behind in the data directory and the
// partition directories the catalog names that are missing. It only
// stats and lists, so a read-only open uses it to report.
func (c *Catalog) planRepair() (Recovery, error) {
	var r Recovery
	entries, err := c.fs.ReadDir(c.dir)
	if err != nil {
		return r, fmt.Errorf("topic: listing %s: %w", c.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == catalogTmp:
			r.RemovedTemp = true
		case !e.IsDir():
		case isDeleteDirName(name):
			r.RemovedDeletes = append(r.RemovedDeletes, name)
		default:
			t, p, ok := ParseDirName(name)
			if !ok {
				continue // not ours
			}
			if in, named := c.state.topics[t]; named && p < in.Config.Partitions {
				continue
			}
			r.RemovedOrphans = append(r.RemovedOrphans, name)
		}
	}
	for _, in := range c.sortedTopics() {
		for p := int32(0); p < in.Config.Partitions; p++ {
			d := DirName(in.Name, p)
			if _, err := c.fs.Stat(c.path(d)); err == nil {
				continue
			} else if !errors.Is(err, os.ErrNotExist) {
				return r, fmt.Errorf("topic: %s: %w", c.path(d), err)
			}
			r.RecreatedDirs = append(r.RecreatedDirs, d)
		}
	}
	return r, nil
}

// repair carries out plan: it removes what crashes left behind and
// recreates missing partition directories, so that the directory holds
// exactly what the catalog names.
func (c *Catalog) repair(plan Recovery) error {
	var doomed []string
	if plan.RemovedTemp {
		doomed = append(doomed, catalogTmp)
	}
	doomed = append(doomed, plan.RemovedDeletes...)
	doomed = append(doomed, plan.RemovedOrphans...)
	for _, name := range doomed {
		if err := removeAll(c.fs, c.path(name)); err != nil {
			return err
		}
	}
	for _, name := range plan.RecreatedDirs {
		if err := c.fs.MkdirAll(c.path(name), 0o755); err != nil {
			return fmt.Errorf("topic: recreating %s: %w", c.path(name), err)
		}
	}
	if len(doomed) > 0 || len(plan.RecreatedDirs) > 0 {
		if err := c.fs.SyncDir(c.dir); err != nil {
			return fmt.Errorf("topic: syncing %s: %w", c.dir, err)
		}
	}
	return nil
}

// Recovery reports what OpenCatalog repaired, or for a read-only catalog
// what a writable open would repair (see the Recovery type).
func (c *Catalog) Recovery() Recovery { return c.recovery }

// Dir returns the data directory.
func (c *Catalog) Dir() string { return c.dir }

// PartitionDir returns the directory of a topic's partition.
func (c *Catalog) PartitionDir(name string, partition int32) string {
	return c.path(DirName(name, partition))
}

// usableLocked reports why the catalog cannot be used, if it cannot.
func (c *Catalog) usableLocked() error {
	if c.closed {
		return ErrClosed
	}
	if c.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, c.failed)
	}
	return nil
}

// Create adds a user topic and creates its partition directories. cfg's
// zero fields take their defaults. The name must pass ValidateName and
// must not collide with an existing topic (ErrNameCollision).
func (c *Catalog) Create(name string, cfg Config) (Info, error) {
	if err := c.refuseReadOnly("create", name); err != nil {
		return Info{}, err
	}
	if err := ValidateName(name); err != nil {
		return Info{}, err
	}
	return c.create(name, false, cfg)
}

// CreateInternal is Create for Folio's own topics, whose names start with
// "__" (ValidateInternalName).
func (c *Catalog) CreateInternal(name string, cfg Config) (Info, error) {
	if err := c.refuseReadOnly("create", name); err != nil {
		return Info{}, err
	}
	if err := ValidateInternalName(name); err != nil {
		return Info{}, err
	}
	return c.create(name, true, cfg)
}

// CreateWithID is Create (or CreateInternal, for an internal name) of a
// topic whose id was chosen elsewhere: a replica of a topic the cluster's
// metadata created, which every broker hosting it holds under the one id.
func (c *Catalog) CreateWithID(name string, id ID, cfg Config) (Info, error) {
	if err := c.refuseReadOnly("create", name); err != nil {
		return Info{}, err
	}
	internal := IsInternal(name)
	validate := ValidateName
	if internal {
		validate = ValidateInternalName
	}
	if err := validate(name); err != nil {
		return Info{}, err
	}
	if id == (ID{}) {
		return Info{}, fmt.Errorf("topic %q: %w: the zero id", name, ErrInvalidConfig)
	}
	return c.createID(name, internal, id, cfg)
}

func (c *Catalog) create(name string, internal bool, cfg Config) (Info, error) {
	return c.createID(name, internal, newID(), cfg)
}

func (c *Catalog) createID(name string, internal bool, id ID, cfg Config) (Info, error) {
	if err := cfg.Validate(); err != nil {
		return Info{}, fmt.Errorf("topic %q: %w", name, err)
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	if err := c.usableLocked(); err != nil {
		return Info{}, err
	}
	if _, ok := c.state.topics[name]; ok {
		return Info{}, fmt.Errorf("%w: %q", ErrExists, name)
	}
	key := collisionKey(name)
	for other := range c.state.topics {
		if collisionKey(other) == key {
			return Info{}, fmt.Errorf("%w: %q and %q", ErrNameCollision, name, other)
		}
	}
	in := Info{
		Name:     name,
		ID:       id,
		Internal: internal,
		Created:  time.UnixMilli(c.now().UnixMilli()),
		Config:   cfg.WithDefaults(),
	}
	if err := c.makeDirsLocked(name, 0, in.Config.Partitions); err != nil {
		return Info{}, err
	}
	if err := c.putLocked(in); err != nil {
		if c.failed == nil { // the old catalog is in force: the dirs are orphans
			c.dropDirsLocked(name, 0, in.Config.Partitions)
		}
		return Info{}, err
	}
	return in, nil
}

// Delete removes a topic: the catalog stops naming it first, then its
// partition directories are renamed to "<topic>-<p>.<id>-delete" (which
// frees the name at once) and removed. The caller closes the partitions'
// logs first. An error wrapping ErrCleanupPending means the topic is gone
// but some directories remain; the next OpenCatalog removes them. Delete
// does not refuse internal topics: that policy is the caller's.
func (c *Catalog) Delete(name string) error {
	if err := c.refuseReadOnly("delete", name); err != nil {
		return err
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	in, err := c.topicLocked(name)
	if err != nil {
		return err
	}
	next := c.state.clone()
	delete(next.topics, name)
	if err := c.commitLocked(next); err != nil {
		return err
	}
	var errs []error
	var doomed []string
	for p := int32(0); p < in.Config.Partitions; p++ {
		src, dst := c.path(DirName(name, p)), c.path(deleteDirName(name, p, in.ID))
		if err := c.fs.Rename(src, dst); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		doomed = append(doomed, dst)
	}
	if len(doomed) > 0 {
		// The renames are made durable before the removal starts, so a
		// crash never leaves a half-emptied directory under a live name.
		if err := c.fs.SyncDir(c.dir); err != nil {
			errs = append(errs, err)
		}
		for _, d := range doomed {
			if err := removeAll(c.fs, d); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.fs.SyncDir(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: topic %q: %w", ErrCleanupPending, name, errors.Join(errs...))
	}
	return nil
}

// AddPartitions grows a topic to total partitions, creating the new
// partitions' directories. Partitions are never removed: a total that is
// not above the current count is refused with ErrInvalidPartitions.
func (c *Catalog) AddPartitions(name string, total int32) (Info, error) {
	if err := c.refuseReadOnly("add partitions to", name); err != nil {
		return Info{}, err
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	in, err := c.topicLocked(name)
	if err != nil {
		return Info{}, err
	}
	cur := in.Config.Partitions
	if total <= cur || total > MaxPartitions {
		return Info{}, fmt.Errorf("%w: topic %q has %d partitions; asked for %d, want more, at most %d", ErrInvalidPartitions, name, cur, total, MaxPartitions)
	}
	if err := c.makeDirsLocked(name, cur, total); err != nil {
		return Info{}, err
	}
	in.Config.Partitions = total
	if err := c.putLocked(in); err != nil {
		if c.failed == nil { // the old catalog is in force: the dirs are orphans
			c.dropDirsLocked(name, cur, total)
		}
		return Info{}, err
	}
	return in, nil
}

// UndoAddPartitions takes back an AddPartitions from from to to partitions
// whose new partitions could not be opened: the catalog holds from
// partitions again and the new partitions' directories go (what a crash
// leaves of them is removed as an orphan at the next open). It refuses,
// with ErrInvalidPartitions, when the topic does not have to partitions.
func (c *Catalog) UndoAddPartitions(name string, from, to int32) error {
	if err := c.refuseReadOnly("undo adding partitions to", name); err != nil {
		return err
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	in, err := c.topicLocked(name)
	if err != nil {
		return err
	}
	if in.Config.Partitions != to || from < 1 || from >= to {
		return fmt.Errorf("%w: topic %q has %d partitions; cannot take %d back to %d", ErrInvalidPartitions, name, in.Config.Partitions, to, from)
	}
	in.Config.Partitions = from
	if err := c.putLocked(in); err != nil {
		return err
	}
	c.dropDirsLocked(name, from, to)
	if err := c.fs.SyncDir(c.dir); err != nil {
		return fmt.Errorf("%w: topic %q: %w", ErrCleanupPending, name, err)
	}
	return nil
}

// Alter replaces a topic's configuration. cfg's zero fields take their
// defaults, except Partitions: zero keeps the current count, and any other
// count must equal it (AddPartitions changes it).
func (c *Catalog) Alter(name string, cfg Config) (Info, error) {
	if err := c.refuseReadOnly("alter", name); err != nil {
		return Info{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Info{}, fmt.Errorf("topic %q: %w", name, err)
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	in, err := c.topicLocked(name)
	if err != nil {
		return Info{}, err
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = in.Config.Partitions
	}
	if cfg.Partitions != in.Config.Partitions {
		return Info{}, fmt.Errorf("%w: topic %q has %d partitions; Alter cannot make it %d (use AddPartitions)", ErrInvalidPartitions, name, in.Config.Partitions, cfg.Partitions)
	}
	in.Config = cfg.WithDefaults()
	if err := c.putLocked(in); err != nil {
		return Info{}, err
	}
	return in, nil
}

// topicLocked returns topic name's entry once the catalog is usable.
// catalogMu must be held.
func (c *Catalog) topicLocked(name string) (Info, error) {
	if err := c.usableLocked(); err != nil {
		return Info{}, err
	}
	in, ok := c.state.topics[name]
	if !ok {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return in, nil
}

// putLocked commits a catalog in which in is its topic's entry.
// catalogMu must be held.
func (c *Catalog) putLocked(in Info) error {
	next := c.state.clone()
	next.topics[in.Name] = in
	return c.commitLocked(next)
}

// Describe returns one topic.
func (c *Catalog) Describe(name string) (Info, error) {
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	return c.topicLocked(name)
}

// List returns every topic, by name.
func (c *Catalog) List() ([]Info, error) {
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	if err := c.usableLocked(); err != nil {
		return nil, err
	}
	return c.sortedTopics(), nil
}

func (c *Catalog) sortedTopics() []Info {
	out := make([]Info, 0, len(c.state.topics))
	for _, in := range c.state.topics {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AllocateProducerID returns a producer id no earlier call on this data
// directory returned, across restarts and crashes: ids come from blocks
// whose end is written to the catalog before the first id of the block is
// handed out. A crash forfeits the rest of the current block.
func (c *Catalog) AllocateProducerID() (int64, error) {
	if err := c.refuseReadOnly("allocate a producer id", ""); err != nil {
		return 0, err
	}
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	if err := c.usableLocked(); err != nil {
		return 0, err
	}
	if c.pidNext == math.MaxInt64 {
		return 0, ErrProducerIDsExhausted
	}
	if c.pidNext >= c.state.nextProducerID {
		next := c.state.clone()
		next.nextProducerID = c.pidNext + min(c.idBlock, math.MaxInt64-c.pidNext)
		if err := c.commitLocked(next); err != nil {
			return 0, err
		}
	}
	id := c.pidNext
	c.pidNext++
	return id, nil
}

// Close releases the catalog. Later calls return ErrClosed; Close itself
// may be called again. Every change was durable when its call returned, so
// Close writes nothing.
func (c *Catalog) Close() error {
	c.catalogMu.Lock()
	defer c.catalogMu.Unlock()
	c.closed = true
	return nil
}

// commitLocked writes next as the catalog and adopts it.
func (c *Catalog) commitLocked(next catalogState) error {
	if err := c.writeCatalogLocked(next); err != nil {
		return err
	}
	c.state = next
	return nil
}

// writeCatalogLocked writes st durably: tmp file, fsync, rename over the
// catalog, fsync of the directory. A failure before the rename leaves the
// old catalog in force and is returned as is. A failed rename or directory
// fsync leaves it unknown which catalog a restart will find, so the
// Catalog refuses further use (ErrFailed) until reopened.
func (c *Catalog) writeCatalogLocked(st catalogState) error {
	data, err := encodeCatalog(st)
	if err != nil {
		return err
	}
	err = vfs.ReplaceFile(c.fs, c.path(catalogTmp), c.path(CatalogFile), data)
	if errors.Is(err, vfs.ErrReplaceUncertain) {
		// Which catalog a power cut leaves is not known now: nothing may
		// go on from the one in memory.
		c.failed = err
		return fmt.Errorf("%w: %w", ErrFailed, c.failed)
	}
	if err != nil {
		return fmt.Errorf("topic: writing the catalog: %w", err)
	}
	return nil
}

// makeDirsLocked creates the directories of partitions [from, to) of a
// topic and makes them durable, so that no catalog ever names a directory
// a crash could take away. A directory already there is an orphan (the
// catalog does not name it) and is replaced by an empty one. On error it
// removes what it created.
func (c *Catalog) makeDirsLocked(name string, from, to int32) error {
	for p := from; p < to; p++ {
		d := c.path(DirName(name, p))
		err := removeAll(c.fs, d)
		if err == nil {
			err = c.fs.MkdirAll(d, 0o755)
		}
		if err != nil {
			c.dropDirsLocked(name, from, p+1)
			return fmt.Errorf("topic: creating %s: %w", d, err)
		}
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		c.dropDirsLocked(name, from, to)
		return fmt.Errorf("topic: syncing %s: %w", c.dir, err)
	}
	return nil
}

// dropDirsLocked removes the directories of partitions [from, to) after a
// failed create or grow, as far as it can: the catalog does not name them,
// so whatever remains is removed as an orphan at the next open.
func (c *Catalog) dropDirsLocked(name string, from, to int32) {
	for p := from; p < to; p++ {
		_ = removeAll(c.fs, c.path(DirName(name, p)))
	}
}

func (st catalogState) clone() catalogState {
	c := catalogState{nextProducerID: st.nextProducerID, topics: make(map[string]Info, len(st.topics)+1)}
	for k, v := range st.topics {
		c.topics[k] = v
	}
	return c
}

// NewID returns a new random topic id (a version 4 UUID, as Kafka's), for
// a topic the cluster's metadata creates before any catalog holds it.
func NewID() ID { return newID() }

func newID() ID {
	var id ID
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

const deleteSuffix = "-delete"

// deleteDirName is Kafka's name for a partition directory awaiting
// removal, "<topic>-<partition>.<id>-delete", with the topic cut short so
// the whole fits in a 255-byte file name (as Kafka does).
func deleteDirName(name string, partition int32, id ID) string {
	suffix := "-" + strconv.FormatInt(int64(partition), 10) + "." + id.String() + deleteSuffix
	return name[:min(len(name), 255-len(suffix))] + suffix
}

// isDeleteDirName recognizes names made by deleteDirName.
func isDeleteDirName(s string) bool {
	s, ok := strings.CutSuffix(s, deleteSuffix)
	if !ok {
		return false
	}
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return false
	}
	if _, err := ParseID(s[i+1:]); err != nil {
		return false
	}
	s = s[:i]
	j := strings.LastIndexByte(s, '-')
	if j <= 0 || !isDigits(s[j+1:]) {
		return false
	}
	return validateChars(s[:j]) == nil
}

// removeAll removes path and everything below it through fs, without
// following symbolic links. A missing path is not an error.
func removeAll(fs vfs.FS, path string) error {
	entries, err := fs.ReadDir(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		// Not a directory (or unreadable): try it as a file.
		if rerr := fs.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return fmt.Errorf("topic: removing %s: %w", path, errors.Join(err, rerr))
		}
		return nil
	}
	for _, e := range entries {
		child := filepath.Join(path, e.Name())
		if e.IsDir() {
			if err := removeAll(fs, child); err != nil {
				return err
			}
			continue
		}
		if err := fs.Remove(child); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("topic: removing %s: %w", child, err)
		}
	}
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("topic: removing %s: %w", path, err)
	}
	return nil
}
