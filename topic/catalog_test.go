package topic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/vfs/faultfs"
)

func openCatalog(t testing.TB, dir string, opts *Options) *Catalog {
	t.Helper()
	c, err := OpenCatalog(dir, opts)
	if err != nil {
		t.Fatalf("OpenCatalog(%s): %v", dir, err)
	}
	return c
}

// dirEntries lists a directory's entry names, directories marked with "/".
func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	return names
}

func TestCatalogLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	clock := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	c := openCatalog(t, dir, &Options{Now: func() time.Time { return clock }})
	if got := dirEntries(t, dir); !slices.Equal(got, []string{CatalogFile}) {
		t.Fatalf("fresh data dir holds %v", got)
	}
	if l, err := c.List(); err != nil || len(l) != 0 {
		t.Fatalf("fresh catalog lists %v, %v", l, err)
	}

	orders, err := c.Create("orders", Config{Partitions: 3, RetentionAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if orders.Config.Partitions != 3 || orders.Config.RetentionAge != time.Hour || orders.Config.SegmentBytes != DefaultSegmentBytes ||
		orders.Internal || orders.ID == (ID{}) || !orders.Created.Equal(clock.Truncate(time.Millisecond)) {
		t.Fatalf("created %+v", orders)
	}
	if _, err := c.CreateInternal("__consumer_offsets", Config{Partitions: 2, Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("audit.log", Config{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"__consumer_offsets-0/", "__consumer_offsets-1/", "audit.log-0/", "orders-0/", "orders-1/", "orders-2/", CatalogFile}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Fatalf("data dir holds %v, want %v", got, want)
	}

	// Refusals create nothing.
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"orders", Config{}, ErrExists},
		{"Orders", Config{}, ErrNameCollision},
		{"audit_log", Config{}, ErrNameCollision},
		{"__mine", Config{}, ErrReservedName},
		{"../escape", Config{}, ErrInvalidName},
		{"a/b", Config{}, ErrInvalidName},
		{"..", Config{}, ErrInvalidName},
		{"ok", Config{Partitions: -3}, ErrInvalidConfig},
		{"ok", Config{SegmentBytes: 1}, ErrInvalidConfig},
	} {
		if _, err := c.Create(tc.name, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("Create(%q, %+v) = %v, want %v", tc.name, tc.cfg, err, tc.want)
		}
	}
	if _, err := c.CreateInternal("plain", Config{}); !errors.Is(err, ErrReservedName) {
		t.Errorf("CreateInternal(plain) = %v", err)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Fatalf("refused creates changed the data dir to %v", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape-0")); !os.IsNotExist(err) {
		t.Fatalf("a refused name created a directory outside the data dir: %v", err)
	}

	// Grow, never shrink.
	if _, err := c.AddPartitions("orders", 5); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{5, 4, 0, -1, MaxPartitions + 1} {
		if _, err := c.AddPartitions("orders", n); !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("AddPartitions(orders, %d) = %v", n, err)
		}
	}
	if _, err := c.AddPartitions("nope", 5); !errors.Is(err, ErrNotFound) {
		t.Errorf("AddPartitions(nope) = %v", err)
	}
	for p := int32(0); p < 5; p++ {
		if fi, err := os.Stat(c.PartitionDir("orders", p)); err != nil || !fi.IsDir() {
			t.Fatalf("partition %d: %v", p, err)
		}
	}

	// Alter keeps the partition count and ID.
	altered, err := c.Alter("orders", Config{Flush: log.FlushNone, Compression: CompressionZstd})
	if err != nil {
		t.Fatal(err)
	}
	if altered.Config.Partitions != 5 || altered.Config.Flush != log.FlushNone || altered.Config.RetentionAge != DefaultRetentionAge || altered.ID != orders.ID {
		t.Fatalf("altered %+v", altered)
	}
	if _, err := c.Alter("orders", Config{Partitions: 6}); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("Alter partitions: %v", err)
	}
	if _, err := c.Alter("orders", Config{MaxMessageBytes: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Alter bad config: %v", err)
	}
	if _, err := c.Alter("nope", Config{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Alter unknown: %v", err)
	}

	// Everything survives a reopen exactly.
	before, _ := c.List()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openCatalog(t, dir, nil)
	after, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before, after, infoEqual) {
		t.Fatalf("reopen changed the catalog:\n%+v\n%+v", before, after)
	}
	if r := c.Recovery(); r.RemovedTemp || len(r.RemovedOrphans)+len(r.RemovedDeletes)+len(r.RecreatedDirs) > 0 {
		t.Fatalf("a clean reopen repaired %+v", r)
	}

	// Delete removes the directories (with their files) and frees the name.
	if err := os.WriteFile(filepath.Join(c.PartitionDir("orders", 1), "00000000000000000000.log"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("orders"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("orders"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := c.Describe("orders"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Describe deleted: %v", err)
	}
	want = []string{"__consumer_offsets-0/", "__consumer_offsets-1/", "audit.log-0/", CatalogFile}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after delete the data dir holds %v", got)
	}
	again, err := c.Create("orders", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == orders.ID {
		t.Fatal("a recreated topic kept its old id")
	}
	if got, _ := os.ReadDir(c.PartitionDir("orders", 0)); len(got) != 0 {
		t.Fatalf("recreated partition holds %v", got)
	}

	// A closed catalog refuses everything; Close may repeat.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.List(); !errors.Is(err, ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
	if _, err := c.Create("x", Config{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
	if _, err := c.AllocateProducerID(); !errors.Is(err, ErrClosed) {
		t.Fatalf("AllocateProducerID after Close: %v", err)
	}
}

func infoEqual(a, b Info) bool {
	return a.Name == b.Name && a.ID == b.ID && a.Internal == b.Internal && a.Created.Equal(b.Created) && a.Config == b.Config
}

func TestCatalogProducerIDs(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, &Options{ProducerIDBlock: 100})
	seen := map[int64]bool{}
	last := int64(-1)
	for i := 0; i < 250; i++ {
		id, err := c.AllocateProducerID()
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] || id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		seen[id], last = true, id
	}
	c.Close()
	// A reopen (as after a crash) skips the rest of the reserved block.
	c = openCatalog(t, dir, &Options{ProducerIDBlock: 100})
	id, err := c.AllocateProducerID()
	if err != nil {
		t.Fatal(err)
	}
	if id != 300 {
		t.Fatalf("first id after reopen %d, want 300 (the next block)", id)
	}
	// Concurrent allocation hands out distinct ids.
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int64]bool{}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				id, err := c.AllocateProducerID()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if got[id] {
					t.Errorf("id %d handed out twice", id)
				}
				got[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if _, err := OpenCatalog(t.TempDir(), &Options{ProducerIDBlock: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("ProducerIDBlock -1: %v", err)
	}
}

func TestCatalogProducerIDsExhausted(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	c.Close()
	// A catalog whose high-water mark is two below the end of the id space.
	rewriteCatalog(t, dir, func(st *catalogState) { st.nextProducerID = math.MaxInt64 - 2 })
	c = openCatalog(t, dir, nil)
	for _, want := range []int64{math.MaxInt64 - 2, math.MaxInt64 - 1} {
		if id, err := c.AllocateProducerID(); err != nil || id != want {
			t.Fatalf("id %d, %v; want %d", id, err, want)
		}
	}
	if _, err := c.AllocateProducerID(); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Fatalf("past the end: %v", err)
	}
}

// rewriteCatalog edits the catalog file of dir directly, with a valid
// checksum, as a test's way to reach states the API cannot.
func rewriteCatalog(t testing.TB, dir string, edit func(*catalogState)) {
	t.Helper()
	p := filepath.Join(dir, CatalogFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	edit(&st)
	if data, err = encodeCatalog(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// framePayload wraps a JSON payload in a valid catalog frame.
func framePayload(payload string) []byte {
	b := append([]byte(catalogMagic), 0, catalogVersion, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crcOf(b))
}

func TestCatalogCorruption(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	if _, err := c.Create("orders", Config{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	good, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, data []byte, want error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, CatalogFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenCatalog(dir, nil)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		// A refused catalog never costs the partitions their directories.
		for p := int32(0); p < 2; p++ {
			if _, err := os.Stat(filepath.Join(dir, DirName("orders", p))); err != nil {
				t.Fatalf("%s: partition %d lost: %v", name, p, err)
			}
		}
	}
	for i := 0; i < len(good); i += 7 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x10
		check(fmt.Sprintf("flip at %d", i), bad, ErrCorrupt)
	}
	for _, n := range []int{0, 3, 12, len(good) / 2, len(good) - 1} {
		check(fmt.Sprintf("truncated to %d", n), good[:n], ErrCorrupt)
	}
	check("appended byte", append(bytes.Clone(good), 0), ErrCorrupt)

	v2 := bytes.Clone(good)
	binary.BigEndian.PutUint16(v2[4:], 2)
	binary.BigEndian.PutUint32(v2[len(v2)-4:], crcOf(v2[:len(v2)-4]))
	check("version 2", v2, ErrUnsupportedVersion)

	id := newID().String()
	cfg := `{"partitions":"2"}`
	for name, payload := range map[string]string{
		"not json":        `{"next_producer_id": 0, "topics": [`,
		"unknown field":   `{"next_producer_id": 0, "topics": [], "extra": 1}`,
		"trailing data":   `{"next_producer_id": 0, "topics": []} {}`,
		"negative pid":    `{"next_producer_id": -5, "topics": []}`,
		"bad name":        `{"next_producer_id": 0, "topics": [{"name": "../x", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"reserved name":   `{"next_producer_id": 0, "topics": [{"name": "__x", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"internal plain":  `{"next_producer_id": 0, "topics": [{"name": "x", "internal": true, "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"bad id":          `{"next_producer_id": 0, "topics": [{"name": "x", "id": "zz", "created_ms": 0, "config": ` + cfg + `}]}`,
		"zero id":         `{"next_producer_id": 0, "topics": [{"name": "x", "id": "` + strings.Repeat("0", 32) + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"upper-case id":   `{"next_producer_id": 0, "topics": [{"name": "x", "id": "` + strings.ToUpper(id) + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"no partitions":   `{"next_producer_id": 0, "topics": [{"name": "x", "id": "` + id + `", "created_ms": 0, "config": {}}]}`,
		"bad setting":     `{"next_producer_id": 0, "topics": [{"name": "x", "id": "` + id + `", "created_ms": 0, "config": {"partitions": "0"}}]}`,
		"unknown setting": `{"next_producer_id": 0, "topics": [{"name": "x", "id": "` + id + `", "created_ms": 0, "config": {"partitions": "1", "color": "red"}}]}`,
		"duplicate topic": `{"next_producer_id": 0, "topics": [{"name": "orders", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}, {"name": "orders", "id": "` + newID().String() + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"colliding":       `{"next_producer_id": 0, "topics": [{"name": "orders", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}, {"name": "Orders", "id": "` + newID().String() + `", "created_ms": 0, "config": ` + cfg + `}]}`,
		"shared id":       `{"next_producer_id": 0, "topics": [{"name": "orders", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}, {"name": "other", "id": "` + id + `", "created_ms": 0, "config": ` + cfg + `}]}`,
	} {
		check(name, framePayload(payload), ErrCorrupt)
	}
	// The good file still opens: the checks above changed nothing else.
	check("restored", good, nil)
	if r := openCatalog(t, dir, nil); len(r.Recovery().RemovedOrphans) != 0 {
		t.Fatalf("reopen removed %v", r.Recovery().RemovedOrphans)
	}
}

func TestCatalogMissingFileBesidePartitions(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	if _, err := c.Create("orders", Config{}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := os.Remove(filepath.Join(dir, CatalogFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCatalog(dir, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing catalog beside partitions: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "orders-0")); err != nil {
		t.Fatalf("partition removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CatalogFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused open wrote a catalog: %v", err)
	}
}

func TestCatalogRepairsLeftovers(t *testing.T) {
	dir := t.TempDir()
	c := openCatalog(t, dir, nil)
	orders, err := c.Create("orders", Config{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	mk := func(name string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "00000000000000000000.log"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("q", MaxNameLength)
	mk("ghost-0")                                     // a crashed create
	mk("orders-2")                                    // a crashed AddPartitions
	mk(deleteDirName("orders", 0, newID()))           // a crashed delete
	mk(deleteDirName(long, MaxPartitions-1, newID())) // one with a cut name
	mk(filepath.Join("ghost-1", "nested"))            // orphans may hold directories
	mk("lost+found")                                  // not ours
	mk("backup")                                      // not ours
	mk("orders-01")                                   // not a name DirName makes
	if err := os.WriteFile(filepath.Join(dir, catalogTmp), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes-0"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "orders-1")); err != nil {
		t.Fatal(err)
	}
	c = openCatalog(t, dir, nil)
	r := c.Recovery()
	sort.Strings(r.RemovedOrphans)
	sort.Strings(r.RemovedDeletes)
	if !slices.Equal(r.RemovedOrphans, []string{"ghost-0", "ghost-1", "orders-2"}) || len(r.RemovedDeletes) != 2 ||
		!r.RemovedTemp || !slices.Equal(r.RecreatedDirs, []string{"orders-1"}) {
		t.Fatalf("recovery %+v", r)
	}
	want := []string{"backup/", "lost+found/", "notes-0", "orders-0/", "orders-01/", "orders-1/", CatalogFile}
	if got := dirEntries(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after repair: %v, want %v", got, want)
	}
	if in, _ := c.Describe("orders"); in.ID != orders.ID {
		t.Fatal("repair changed the topic")
	}
}

// FuzzDeleteDirName: every valid name gives a delete-pending name that
// fits a file name, stays in the data directory, is recognized, and is not
// mistaken for a partition directory.
func FuzzDeleteDirName(f *testing.F) {
	f.Add("orders", int32(0))
	f.Add(strings.Repeat("x", MaxNameLength), int32(MaxPartitions-1))
	f.Add("__consumer_offsets", int32(49))
	f.Fuzz(func(t *testing.T, name string, p int32) {
		if ValidateName(name) != nil && ValidateInternalName(name) != nil || p < 0 || p >= MaxPartitions {
			return
		}
		d := deleteDirName(name, p, newID())
		if len(d) > 255 || strings.ContainsAny(d, "/\\\x00") || !isDeleteDirName(d) {
			t.Fatalf("deleteDirName(%q, %d) = %q", name, p, d)
		}
		if _, _, ok := ParseDirName(d); ok {
			t.Fatalf("%q parses as a partition directory", d)
		}
	})
}

func TestDeleteDirNames(t *testing.T) {
	id := newID()
	for _, tc := range []struct {
		name string
		p    int32
	}{{"orders", 0}, {"a", 99999}, {strings.Repeat("x", MaxNameLength), MaxPartitions - 1}, {"__consumer_offsets", 3}} {
		d := deleteDirName(tc.name, tc.p, id)
		if len(d) > 255 || !isDeleteDirName(d) {
			t.Errorf("deleteDirName(%q, %d) = %q (%d bytes), recognized %v", tc.name, tc.p, d, len(d), isDeleteDirName(d))
		}
		if _, _, ok := ParseDirName(d); ok {
			t.Errorf("delete dir %q parses as a partition dir", d)
		}
	}
	for _, s := range []string{"orders-0", "orders-0-delete", "orders-0.abc-delete", "orders-x." + id.String() + "-delete",
		"-0." + id.String() + "-delete", "a b-0." + id.String() + "-delete", "orders-0." + id.String()} {
		if isDeleteDirName(s) {
			t.Errorf("isDeleteDirName(%q)", s)
		}
	}
}

// crashCase is one catalog operation run against a prepared data dir.
type crashCase struct {
	name string
	run  func(c *Catalog) error
	// want describes the new state; the old one is the setup's.
	want func(old map[string]Config) map[string]Config
	// between, if set, is a state the operation passes through (it is two
	// catalog changes) that a crash may also leave.
	between func(old map[string]Config) map[string]Config
	// pidFloor is the least first producer id after a reopen if the
	// operation succeeded.
	pidFloor int64
}

// setupCrashDir prepares a data directory the FaultFS treats as durable:
// topics keep (2 partitions, each with a segment file) and victim (2
// partitions).
func setupCrashDir(t *testing.T, fs *faultfs.FS) (dir string, old map[string]Config, keepID ID) {
	t.Helper()
	dir = filepath.Join(fastTempDir(t), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := openCatalog(t, dir, &Options{FS: fs, ProducerIDBlock: 10})
	keep, err := c.Create("keep", Config{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("victim", Config{Partitions: 2, Flush: log.FlushNone}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{c.PartitionDir("keep", 0), c.PartitionDir("keep", 1), c.PartitionDir("victim", 1)} {
		writeDurable(t, fs, filepath.Join(d, "00000000000000000000.log"), []byte("segment bytes"))
	}
	c.Close()
	return dir, map[string]Config{"keep": keep.Config, "victim": (Config{Partitions: 2, Flush: log.FlushNone}).WithDefaults()}, keep.ID
}

func writeDurable(t *testing.T, fs *faultfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.SyncDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
}

var crashCases = []crashCase{
	{
		name: "create",
		run: func(c *Catalog) error {
			_, err := c.Create("fresh", Config{Partitions: 3})
			return err
		},
		want: func(old map[string]Config) map[string]Config {
			old["fresh"] = (Config{Partitions: 3}).WithDefaults()
			return old
		},
	},
	{
		name: "delete",
		run:  func(c *Catalog) error { return c.Delete("victim") },
		want: func(old map[string]Config) map[string]Config {
			delete(old, "victim")
			return old
		},
	},
	{
		name: "delete and recreate",
		run: func(c *Catalog) error {
			// Re-runnable after a failure between the two steps.
			if in, err := c.Describe("victim"); err == nil && in.Config.Partitions == 2 {
				if err := c.Delete("victim"); err != nil {
					return err
				}
			}
			_, err := c.Create("victim", Config{Partitions: 1})
			return err
		},
		want: func(old map[string]Config) map[string]Config {
			old["victim"] = (Config{Partitions: 1}).WithDefaults()
			return old
		},
		between: func(old map[string]Config) map[string]Config {
			delete(old, "victim")
			return old
		},
	},
	{
		name: "add partitions",
		run: func(c *Catalog) error {
			_, err := c.AddPartitions("victim", 4)
			return err
		},
		want: func(old map[string]Config) map[string]Config {
			cfg := old["victim"]
			cfg.Partitions = 4
			old["victim"] = cfg
			return old
		},
	},
	{
		name: "alter",
		run: func(c *Catalog) error {
			_, err := c.Alter("victim", Config{RetentionBytes: 1 << 20})
			return err
		},
		want: func(old map[string]Config) map[string]Config {
			old["victim"] = (Config{Partitions: 2, RetentionBytes: 1 << 20}).WithDefaults()
			return old
		},
	},
	{
		name: "producer id block",
		run: func(c *Catalog) error {
			for i := 0; i < 15; i++ { // crosses into a second block of 10
				if _, err := c.AllocateProducerID(); err != nil {
					return err
				}
			}
			return nil
		},
		want:     func(old map[string]Config) map[string]Config { return old },
		pidFloor: 15,
	},
}

// TestCatalogCrashAtEveryStep stops each catalog operation at every one of
// its file operations (that one and all after it fail, as when a process
// dies there), then cuts the power (or only crashes the process), reopens,
// and checks: the catalog shows the old state or the new one, the new one
// if the operation returned success; the directory holds exactly the
// partition directories the catalog names (no orphans, no delete-pending
// directories, no temporary file); no named directory was lost; the kept
// topic's data is intact; and the reopened catalog works.
func TestCatalogCrashAtEveryStep(t *testing.T) {
	for _, cc := range crashCases {
		t.Run(cc.name, func(t *testing.T) {
			// A dry run counts the operation's steps.
			fs := faultfs.New()
			dir, _, _ := setupCrashDir(t, fs)
			var steps int
			var stepLog []string
			fs.SetHook(func(op faultfs.Op) error {
				steps++
				stepLog = append(stepLog, op.String())
				return nil
			})
			c := openCatalog(t, dir, &Options{FS: fs, ProducerIDBlock: 10})
			openSteps := steps
			if err := cc.run(c); err != nil {
				t.Fatalf("dry run: %v", err)
			}
			opSteps := steps - openSteps
			t.Logf("%d steps: %v", opSteps, stepLog[openSteps:])
			if opSteps < 4 {
				t.Fatalf("only %d steps", opSteps)
			}
			for k := 1; k <= opSteps+1; k++ {
				for _, cut := range []bool{true, false} {
					crashAt(t, cc, k, cut)
				}
			}
		})
	}
}

func crashAt(t *testing.T, cc crashCase, k int, cut bool) {
	t.Helper()
	fs := faultfs.New()
	dir, old, keepID := setupCrashDir(t, fs)
	c := openCatalog(t, dir, &Options{FS: fs, ProducerIDBlock: 10})
	dead := fmt.Errorf("process died at step %d: %w", k, syscall.EIO)
	fs.SetHook(faultfs.FailFromNthWhere(func(faultfs.Op) bool { return true }, k, dead))
	opErr := cc.run(c)
	if cut {
		if err := fs.PowerCut(); err != nil {
			t.Fatalf("step %d: PowerCut: %v", k, err)
		}
	} else {
		fs.Crash()
	}
	fs.SetHook(nil)
	where := fmt.Sprintf("step %d (power cut %v, op err %v)", k, cut, opErr)

	c2, err := OpenCatalog(dir, &Options{FS: fs, ProducerIDBlock: 10})
	if err != nil {
		t.Fatalf("%s: reopen: %v", where, err)
	}
	defer c2.Close()
	list, err := c2.List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Config{}
	for _, in := range list {
		got[in.Name] = in.Config
	}
	oldState := cloneConfigs(old)
	newState := cc.want(cloneConfigs(old))
	isOld, isNew := mapsEqual(got, oldState), mapsEqual(got, newState)
	if cc.between != nil && mapsEqual(got, cc.between(cloneConfigs(old))) {
		isOld = true // a completed first step is an old state for the second
	}
	if !isOld && !isNew {
		t.Fatalf("%s: catalog holds %v; neither old %v nor new %v", where, got, oldState, newState)
	}
	if opErr == nil && !isNew {
		t.Fatalf("%s: the operation succeeded but the catalog is the old one", where)
	}
	if in, _ := c2.Describe("keep"); in.ID != keepID {
		t.Fatalf("%s: keep's id changed", where)
	}
	if r := c2.Recovery(); len(r.RecreatedDirs) > 0 {
		t.Fatalf("%s: the catalog named directories the crash took: %v", where, r.RecreatedDirs)
	}
	// Exactly the named partition directories remain.
	var want []string
	for name, cfg := range got {
		for p := int32(0); p < cfg.Partitions; p++ {
			want = append(want, DirName(name, p)+"/")
		}
	}
	want = append(want, CatalogFile)
	sort.Strings(want)
	if entries := dirEntries(t, dir); !slices.Equal(entries, want) {
		t.Fatalf("%s: data dir holds %v, want %v", where, entries, want)
	}
	for p := int32(0); p < 2; p++ {
		b, err := os.ReadFile(filepath.Join(dir, DirName("keep", p), "00000000000000000000.log"))
		if err != nil || string(b) != "segment bytes" {
			t.Fatalf("%s: keep-%d segment: %q, %v", where, p, b, err)
		}
	}
	// A recreated or new partition starts empty.
	if cfg, ok := got["victim"]; ok && cfg.Partitions == 1 {
		if entries, _ := os.ReadDir(filepath.Join(dir, "victim-0")); len(entries) != 0 {
			t.Fatalf("%s: recreated victim-0 holds %v", where, entries)
		}
	}
	if cc.pidFloor > 0 && opErr == nil {
		id, err := c2.AllocateProducerID()
		if err != nil || id < cc.pidFloor {
			t.Fatalf("%s: producer id %d after reopen, %v; ids below %d were handed out", where, id, err, cc.pidFloor)
		}
	}
	// The reopened catalog takes changes.
	if _, err := c2.Create("after", Config{}); err != nil {
		t.Fatalf("%s: create after reopen: %v", where, err)
	}
}

func cloneConfigs(m map[string]Config) map[string]Config {
	c := make(map[string]Config, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func mapsEqual(a, b map[string]Config) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCatalogFailuresWithoutCrash fails one step of an operation and lets
// the process go on: a failure before the catalog rename leaves the old
// catalog in force and the Catalog usable (the operation can be retried);
// a failure at the rename or directory fsync makes the outcome unknown, so
// the Catalog refuses use (ErrFailed) until reopened. Either way the
// partition directories match the catalog after a reopen.
func TestCatalogFailuresWithoutCrash(t *testing.T) {
	for _, cc := range crashCases {
		t.Run(cc.name, func(t *testing.T) {
			for k := 1; ; k++ {
				fs := faultfs.New()
				dir, old, _ := setupCrashDir(t, fs)
				c := openCatalog(t, dir, &Options{FS: fs, ProducerIDBlock: 10})
				var failedOp faultfs.Op
				var n int
				fs.SetHook(func(op faultfs.Op) error {
					n++
					if n == k {
						failedOp = op
						return &faultfs.ShortWriteError{N: 5, Err: syscall.EIO}
					}
					return nil
				})
				opErr := cc.run(c)
				fs.SetHook(nil)
				if failedOp.Kind == 0 {
					if opErr != nil {
						t.Fatalf("no step failed, yet %v", opErr)
					}
					return // k passed the operation's last step
				}
				where := fmt.Sprintf("step %d (%v)", k, failedOp)
				if opErr == nil && !errors.Is(opErr, ErrCleanupPending) {
					// Cleanup after a committed delete may fail without
					// failing the delete; everything else must report.
					if failedOp.Kind != faultfs.OpRemove && failedOp.Kind != faultfs.OpSyncDir {
						t.Fatalf("%s: failed step went unreported", where)
					}
				}
				uncertain := errors.Is(opErr, ErrFailed)
				if uncertain {
					if _, err := c.List(); !errors.Is(err, ErrFailed) {
						t.Fatalf("%s: List after an unknown outcome: %v", where, err)
					}
				} else if opErr != nil && !errors.Is(opErr, ErrCleanupPending) {
					// A clean failure: the old state is in force and a retry works.
					list, err := c.List()
					if err != nil {
						t.Fatalf("%s: List: %v", where, err)
					}
					got := map[string]Config{}
					for _, in := range list {
						got[in.Name] = in.Config
					}
					if !mapsEqual(got, old) && (cc.between == nil || !mapsEqual(got, cc.between(cloneConfigs(old)))) {
						t.Fatalf("%s: after a clean failure the catalog holds %v", where, got)
					}
					if err := cc.run(c); err != nil {
						t.Fatalf("%s: retry: %v", where, err)
					}
				}
				c.Close()
				fs.Crash()
				c2, err := OpenCatalog(dir, &Options{FS: fs})
				if err != nil {
					t.Fatalf("%s: reopen: %v", where, err)
				}
				list, _ := c2.List()
				var want []string
				for _, in := range list {
					for p := int32(0); p < in.Config.Partitions; p++ {
						want = append(want, DirName(in.Name, p)+"/")
					}
				}
				want = append(want, CatalogFile)
				sort.Strings(want)
				if entries := dirEntries(t, dir); !slices.Equal(entries, want) {
					t.Fatalf("%s: data dir holds %v, want %v", where, entries, want)
				}
				c2.Close()
			}
		})
	}
}

// TestCatalogWriteOrder checks the ordering rules directly, at the moment
// each step runs, for every operation: when the catalog is renamed into
// place, every partition directory it names is already durable; and when a
// partition directory (or anything in it) is renamed away or removed, the
// durable catalog no longer names it. A power cut can only show an
// ordering mistake if it lands between two directory syncs; this test does
// not depend on where the syncs are.
func TestCatalogWriteOrder(t *testing.T) {
	for _, cc := range crashCases {
		t.Run(cc.name, func(t *testing.T) {
			fs := faultfs.New()
			dir, _, _ := setupCrashDir(t, fs)
			c := openCatalog(t, dir, &Options{FS: fs, ProducerIDBlock: 10})
			catalogPath := filepath.Join(dir, CatalogFile)
			named := func(data []byte) map[string]bool {
				st, err := decodeCatalog(data)
				if err != nil {
					t.Errorf("catalog: %v", err)
					return nil
				}
				m := map[string]bool{}
				for _, in := range st.topics {
					for p := int32(0); p < in.Config.Partitions; p++ {
						m[DirName(in.Name, p)] = true
					}
				}
				return m
			}
			var checks int
			fs.SetHook(func(op faultfs.Op) error {
				if op.Kind == faultfs.OpRename && op.NewPath == catalogPath {
					data, err := os.ReadFile(op.Path)
					if err != nil {
						t.Errorf("reading %s: %v", op.Path, err)
						return nil
					}
					durable, _ := fs.DurableNames(dir)
					for d := range named(data) {
						if !slices.Contains(durable, d) {
							t.Errorf("the catalog is renamed into place naming %s, which is not durable", d)
						}
					}
					checks++
				}
				if (op.Kind == faultfs.OpRename || op.Kind == faultfs.OpRemove) && op.Path != filepath.Join(dir, catalogTmp) && strings.HasPrefix(op.Path, dir+"/") {
					rel, _ := filepath.Rel(dir, op.Path)
					top := strings.Split(rel, string(filepath.Separator))[0]
					if _, _, ok := ParseDirName(top); ok {
						data, ok := fs.Durable(catalogPath)
						if !ok {
							t.Errorf("no durable catalog")
						} else if named(data)[top] {
							t.Errorf("%v while the durable catalog still names %s", op, top)
						}
						checks++
					}
				}
				return nil
			})
			if err := cc.run(c); err != nil {
				t.Fatal(err)
			}
			if checks == 0 {
				t.Fatal("no step was checked")
			}
		})
	}
}

// fastTempDir is t.TempDir, but on a RAM file system where there is one.
// The crash tests model durability with faultfs.FS, which still issues
// the real fsyncs; on a disk each costs milliseconds, and the tests run
// thousands. What survives a cut there is decided by the FaultFS model,
// not by the device, so the device does not matter.
func fastTempDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "folio-topic-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// FuzzDecodeCatalog: no catalog file panics the decoder; a refused one is a
// typed error; an accepted one re-encodes to a file that decodes to the
// same state.
func FuzzDecodeCatalog(f *testing.F) {
	empty, _ := encodeCatalog(catalogState{topics: map[string]Info{}})
	f.Add(empty)
	st := catalogState{nextProducerID: 2000, topics: map[string]Info{}}
	for i, name := range []string{"orders", "__consumer_offsets", "a.b-c_d"} {
		st.topics[name] = Info{Name: name, ID: newID(), Internal: IsInternal(name), Created: time.UnixMilli(int64(i) * 1e12),
			Config: (Config{Partitions: int32(i + 1), Flush: log.FlushEveryN(10)}).WithDefaults()}
	}
	full, _ := encodeCatalog(st)
	f.Add(full)
	f.Add(framePayload(`{"next_producer_id":1,"topics":[{"name":"x","id":"` + newID().String() + `","created_ms":5,"config":{"partitions":"2","flush":"none"}}]}`))
	f.Add(framePayload(`{}`))
	f.Add([]byte(`{"next_producer_id":1,"topics":[{"name":"y","id":"` + newID().String() + `","created_ms":5,"config":{"partitions":"2"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzCatalogBytes(t, data)
		// Also as a payload in a valid frame, so mutations reach the
		// JSON checks behind the checksum.
		fuzzCatalogBytes(t, framePayload(string(data)))
	})
}

func fuzzCatalogBytes(t *testing.T, data []byte) {
	st, err := decodeCatalog(data)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	again, err := encodeCatalog(st)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := decodeCatalog(again)
	if err != nil {
		t.Fatalf("re-encoded catalog refused: %v", err)
	}
	if st2.nextProducerID != st.nextProducerID || len(st2.topics) != len(st.topics) {
		t.Fatalf("round trip changed the catalog")
	}
	for name, in := range st.topics {
		if !infoEqual(in, st2.topics[name]) {
			t.Fatalf("round trip changed %q: %+v vs %+v", name, in, st2.topics[name])
		}
	}
}

// TestCatalogNewDataDirIsDurable: a data directory the catalog creates
// survives a power cut together with the topics created in it.
func TestCatalogNewDataDirIsDurable(t *testing.T) {
	fs := faultfs.New()
	dir := filepath.Join(fastTempDir(t), "var", "folio", "data")
	c := openCatalog(t, dir, &Options{FS: fs})
	if _, err := c.Create("orders", Config{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := fs.PowerCut(); err != nil {
		t.Fatal(err)
	}
	c = openCatalog(t, dir, &Options{FS: fs})
	if in, err := c.Describe("orders"); err != nil || in.Config.Partitions != 2 {
		t.Fatalf("after a power cut: %+v, %v", in, err)
	}
	if r := c.Recovery(); len(r.RecreatedDirs) > 0 {
		t.Fatalf("partition directories lost: %v", r.RecreatedDirs)
	}
}

// TestCatalogBeforeCompactionSettings: a catalog written before the
// compaction settings existed (no min.cleanable.dirty.ratio,
// min.compaction.lag.ms or delete.retention.ms) loads with their defaults,
// and the next write spells them out.
func TestCatalogBeforeCompactionSettings(t *testing.T) {
	dir := t.TempDir()
	id := newID()
	payload := `{"next_producer_id": 1000, "topics": [{"name": "orders", "id": "` + id.String() + `", "created_ms": 1700000000000,
		"config": {"partitions": "2", "retention.bytes": "unlimited", "retention.ms": "7d", "segment.bytes": "1GiB",
		"segment.ms": "7d", "flush": "sync", "read.path": "mmap", "cleanup.policy": "compact",
		"message.timestamp.type": "CreateTime", "max.message.bytes": "1048588", "compression.type": "producer"}}]}`
	for p := int32(0); p < 2; p++ {
		if err := os.Mkdir(filepath.Join(dir, DirName("orders", p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), framePayload(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	c := openCatalog(t, dir, nil)
	in, err := c.Describe("orders")
	if err != nil {
		t.Fatal(err)
	}
	want := (Config{Partitions: 2, Cleanup: CleanupCompact}).WithDefaults()
	if in.Config != want || in.ID != id {
		t.Fatalf("old catalog loaded as %+v (id %s), want %+v (id %s)", in.Config, in.ID, want, id)
	}
	if in.Config.MinCleanableDirtyRatio != DefaultMinCleanableDirtyRatio || in.Config.MinCompactionLag != 0 ||
		in.Config.DeleteRetention != DefaultDeleteRetention {
		t.Fatalf("compaction settings of an old catalog: %+v", in.Config)
	}
	// Any write of the catalog stores every setting.
	if _, err := c.Create("audit", Config{DeleteRetention: NoDeleteRetention, MinCompactionLag: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	data, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"min.cleanable.dirty.ratio": "0.5"`, `"delete.retention.ms": "1d"`,
		`"delete.retention.ms": "0s"`, `"min.compaction.lag.ms": "1m"`, `"min.compaction.lag.ms": "0s"`} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("rewritten catalog lacks %s:\n%s", s, data)
		}
	}
	c = openCatalog(t, dir, nil)
	defer c.Close()
	if in, err := c.Describe("audit"); err != nil || in.Config.DeleteRetention != NoDeleteRetention || in.Config.MinCompactionLag != time.Minute {
		t.Fatalf("audit reloaded as %+v, %v", in.Config, err)
	}
	if in, err := c.Describe("orders"); err != nil || in.Config != want {
		t.Fatalf("orders reloaded as %+v, %v, want %+v", in.Config, err, want)
	}
}

// TestCatalogIndexInterval: index.interval.bytes round-trips through the
// catalog (Kafka's 0, IndexEveryBatch, stored as 0, not as the default),
// and a catalog written before the setting existed loads with Kafka's
// default, 4096, which the next write spells out.
func TestCatalogIndexInterval(t *testing.T) {
	dir := t.TempDir()
	id := newID()
	// Every setting of the build before index.interval.bytes.
	payload := `{"next_producer_id": 0, "topics": [{"name": "old", "id": "` + id.String() + `", "created_ms": 1700000000000,
		"config": {"partitions": "1", "retention.bytes": "unlimited", "retention.ms": "7d", "segment.bytes": "1GiB",
		"segment.ms": "7d", "flush": "sync", "read.path": "mmap", "cleanup.policy": "delete",
		"min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0s", "delete.retention.ms": "1d",
		"message.timestamp.type": "CreateTime", "max.message.bytes": "1MiB", "compression.type": "producer",
		"unclean.leader.election.enable": "false"}}]}`
	if err := os.Mkdir(filepath.Join(dir, DirName("old", 0)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), framePayload(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	c := openCatalog(t, dir, nil)
	in, err := c.Describe("old")
	if err != nil {
		t.Fatal(err)
	}
	if in.Config.IndexIntervalBytes != DefaultIndexIntervalBytes || in.Config != (Config{MaxMessageBytes: 1 << 20}).WithDefaults() {
		t.Fatalf("a catalog without index.interval.bytes loaded as %+v, want the default %d", in.Config, DefaultIndexIntervalBytes)
	}
	want := map[string]int32{"small": 128, "every": IndexEveryBatch, "default": 0, "large": math.MaxInt32}
	for name, n := range want {
		if _, err := c.Create(name, Config{IndexIntervalBytes: n}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	data, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"index.interval.bytes": "128"`, `"index.interval.bytes": "0"`, `"index.interval.bytes": "4KiB"`, `"index.interval.bytes": "2147483647"`} {
		if !bytes.Contains(data, []byte(s)) {
			t.Errorf("catalog lacks %s:\n%s", s, data)
		}
	}
	c = openCatalog(t, dir, nil)
	defer c.Close()
	want["default"], want["old"] = DefaultIndexIntervalBytes, DefaultIndexIntervalBytes
	for name, n := range want {
		if in, err := c.Describe(name); err != nil || in.Config.IndexIntervalBytes != n {
			t.Errorf("%s reloaded with IndexIntervalBytes %d (%v), want %d", name, in.Config.IndexIntervalBytes, err, n)
		}
	}
}
