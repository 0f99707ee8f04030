package folio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// TestDirectoryDamage damages one file of a data directory's partition in
// one way at a time, after a clean and after an unclean shutdown, and
// checks what the project promises: the directory opens (it holds a valid
// prefix), a consumer reading the partition from the start gets every
// record outside the damaged segment at its offset with its bytes (passing
// over each reported damaged range), and the next record produced goes
// right after the real end. The damage: a cut inside a batch, a broken
// batch header, the .log deleted, emptied or renamed to each transient
// suffix, a stray zero-filled segment past the end, a garbage .log.swap
// beside an intact segment, a missing index. The victim segment and the
// positions come from the seed (printed; replay with -seed), and each run
// checks a bounded number of cases.
func TestDirectoryDamage(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tmpl := t.TempDir()
	b := openT(t, tmpl, nil)
	createTopicT(t, b, "d", TopicConfig{Flush: FlushNone, SegmentBytes: 32 << 10, Partitions: 1})
	p := producerT(t, b, nil)
	const n = 1500
	produceN(t, p, "d", "r", n)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := topic.DirName("d", 0)
	var bases []int64
	ents, err := os.ReadDir(filepath.Join(tmpl, pdir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if base, suf, ok := segment.ParseFileName(e.Name()); ok && suf == segment.LogSuffix {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	if len(bases) < 4 {
		t.Fatalf("%d segments", len(bases))
	}

	type damage func(t *testing.T, dir string, base int64) (lost bool)
	logPath := func(dir string, base int64) string { return segment.LogPath(filepath.Join(dir, pdir), base) }
	batchPos := func(t *testing.T, path string, k int) int64 {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pos := int64(0)
		for range k {
			pos += int64(binary.BigEndian.Uint32(data[pos+8:])) + 12
		}
		return pos
	}
	renameTo := func(suffix string) damage {
		return func(t *testing.T, dir string, base int64) bool {
			if err := os.Rename(logPath(dir, base), logPath(dir, base)+suffix); err != nil {
				t.Fatal(err)
			}
			return suffix != segment.DeletedSuffix // renamed back when inside the log
		}
	}
	kinds := map[string]damage{
		"cut inside a batch": func(t *testing.T, dir string, base int64) bool {
			pos := batchPos(t, logPath(dir, base), 1+rng.IntN(5))
			if err := os.Truncate(logPath(dir, base), pos+1+int64(rng.IntN(40))); err != nil {
				t.Fatal(err)
			}
			return true
		},
		"broken batch header": func(t *testing.T, dir string, base int64) bool {
			path := logPath(dir, base)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[batchPos(t, path, 1+rng.IntN(5))+16] = 9 // magic
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return true
		},
		"deleted": func(t *testing.T, dir string, base int64) bool {
			if err := os.Remove(logPath(dir, base)); err != nil {
				t.Fatal(err)
			}
			return true
		},
		"emptied": func(t *testing.T, dir string, base int64) bool {
			if err := os.Truncate(logPath(dir, base), 0); err != nil {
				t.Fatal(err)
			}
			return true
		},
		"renamed .deleted": renameTo(segment.DeletedSuffix),
		"renamed .swap":    renameTo(".swap"),
		"renamed .cleaned": renameTo(".cleaned"),
		"stray past the end": func(t *testing.T, dir string, base int64) bool {
			if err := os.WriteFile(logPath(dir, n+int64(rng.IntN(100000))), make([]byte, 4096), 0o644); err != nil {
				t.Fatal(err)
			}
			return false
		},
		"garbage .log.swap": func(t *testing.T, dir string, base int64) bool {
			data, err := os.ReadFile(logPath(dir, base))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath(dir, base)+".swap", data[:rng.IntN(len(data))], 0o644); err != nil {
				t.Fatal(err)
			}
			return false
		},
		"missing index": func(t *testing.T, dir string, base int64) bool {
			if err := os.Remove(segment.IndexPath(filepath.Join(dir, pdir), base)); err != nil {
				t.Fatal(err)
			}
			return false
		},
	}
	names := make([]string, 0, len(kinds))
	for name := range kinds {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, clean := range []bool{true, false} {
			// A middle segment: the last one's damage is a torn tail.
			k := 1 + rng.IntN(len(bases)-2)
			base := bases[k]
			t.Run(fmt.Sprintf("%s/clean=%v/segment=%d", name, clean, base), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "data")
				copyTree(t, tmpl, dir)
				if !clean {
					if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(filepath.Join(dir, CheckpointFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
						t.Fatal(err)
					}
				}
				lost := kinds[name](t, dir, base)
				b := openT(t, dir, nil)
				c := consumerT(t, b, nil)
				if err := c.Assign(Assignment{Topic: "d", Start: AtEarliest()}); err != nil {
					t.Fatal(err)
				}
				got := map[int64][]byte{}
				for polls := 0; ; polls++ {
					if polls > 10000 {
						t.Fatal("no end to polling")
					}
					pos, _ := c.Position("d", 0)
					if pos >= n {
						break
					}
					recs, err := c.Poll(context.Background())
					var d *log.DamagedRangeError
					if errors.As(err, &d) && IsCorrupt(err) {
						t.Logf("reported: %v", err)
						continue
					}
					if err != nil {
						t.Fatalf("Poll at %d: %v", pos, err)
					}
					for _, r := range recs {
						got[r.Offset] = slices.Clone(r.Value)
					}
				}
				end := int64(n)
				for i := int64(0); i < n; i++ {
					inVictim := i >= base && i < bases[k+1]
					v, ok := got[i]
					if (!ok && !(inVictim && lost)) || (ok && string(v) != string(value("r", int(i)))) {
						t.Fatalf("offset %d (segment %d damaged: %v): read %v %q", i, base, inVictim, ok, v)
					}
				}
				pp := producerT(t, b, nil)
				if _, off, err := pp.Produce(context.Background(), &Record{Topic: "d", Value: []byte("next")}); err != nil || off != end {
					t.Fatalf("next produce: offset %d %v, want %d", off, err, end)
				}
			})
		}
	}
}

// copyTree copies the directory tree src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if strings.HasPrefix(d.Name(), ".lock") {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}
