package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// cacheState is the page-cache state a run asks for.
type cacheState int

const (
	warmCache cacheState = iota // every page resident before the run
	coldCache                   // no page resident before the run
)

func (c cacheState) String() string {
	if c == coldCache {
		return "cold"
	}
	return "warm"
}

// prepareCache brings the files to state c and returns the fraction of
// their pages resident afterwards, as mincore reports it. The fraction is
// what the report shows: a "cold" run on a filesystem that cannot evict
// (tmpfs) is reported with its real residency, not as cold. Callers must
// have closed every mapping of the files first: the kernel does not evict
// pages that a process maps.
func prepareCache(c cacheState, paths []string) (float64, error) {
	if c == coldCache {
		return evictAll(paths)
	}
	for _, p := range paths {
		if err := readThrough(p); err != nil {
			return math.NaN(), err
		}
	}
	frac, err := residencyOf(paths)
	if errors.Is(err, ErrNoCacheControl) && c == warmCache {
		// A warm run stays meaningful without mincore: the file was just
		// read. Its residency is reported as unknown (NaN).
		return math.NaN(), nil
	}
	return frac, err
}

// coldSupported reports whether this platform can evict a file from the
// page cache and verify it, i.e. whether cold-cache rows can be measured.
func coldSupported(dir string) bool {
	f, err := os.CreateTemp(dir, "probe-*")
	if err != nil {
		return false
	}
	name := f.Name()
	defer os.Remove(name)
	_, werr := f.Write(make([]byte, 4096))
	f.Close()
	if werr != nil {
		return false
	}
	if err := evict(name); err != nil {
		return false
	}
	_, _, err = residency(name)
	return err == nil
}

// evictAttempts bounds the retries of an eviction. POSIX_FADV_DONTNEED
// skips pages something still holds a reference to. After a cold
// sendfile(2) run, socket buffers waiting to be freed pin some pages (see
// nudgeNetwork); between attempts the network is nudged and the wait
// doubles, up to about 1.3 s in all, before the run goes ahead and reports
// what residency it got.
const evictAttempts = 8

// evictAll evicts paths until mincore finds none of their pages resident
// or the attempts run out; it returns the residency it ended with, which a
// run reports whatever it is.
func evictAll(paths []string) (float64, error) {
	frac := math.NaN()
	wait := 5 * time.Millisecond
	for range evictAttempts {
		for _, p := range paths {
			if err := evict(p); err != nil {
				return math.NaN(), err
			}
		}
		var err error
		if frac, err = residencyOf(paths); err != nil || frac == 0 {
			return frac, err
		}
		if err := nudgeNetwork(); err != nil {
			return frac, err
		}
		time.Sleep(wait)
		wait *= 2
	}
	return frac, nil
}

// residencyOf is the resident fraction of all pages of paths together.
func residencyOf(paths []string) (float64, error) {
	var res, total int64
	for _, p := range paths {
		r, t, err := residency(p)
		if err != nil {
			return math.NaN(), err
		}
		res += r
		total += t
	}
	if total == 0 {
		return 1, nil
	}
	return float64(res) / float64(total), nil
}

// readThrough reads a file once with read(2) so its pages enter the cache
// without this process mapping them.
func readThrough(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bench: warm %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		_, err := f.Read(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("bench: warm %s: %w", path, err)
		}
	}
}

// filesUnder lists the regular files below dir, for suites (recovery,
// partitions) whose data is many files.
func filesUnder(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench: list %s: %w", dir, err)
	}
	return out, nil
}

// describeCache is the cache column of a row: the state asked for and the
// residency measured before each run (min–max when runs differ).
func describeCache(c cacheState, fractions []float64) string {
	s := summarize(fractions)
	if math.IsNaN(s.Median) {
		return c.String() + ", residency unknown"
	}
	lo, hi := 100*s.Min, 100*s.Max
	state := c.String()
	if c == coldCache && lo > 5 {
		// More than a few percent still resident is not cold, whatever
		// was asked; say what it was.
		state = "cold requested, not reached"
	}
	if c == warmCache && hi < 95 {
		state = "warm requested, not reached"
	}
	if formatPct(lo) == formatPct(hi) {
		return fmt.Sprintf("%s, %s resident", state, formatPct(lo))
	}
	return fmt.Sprintf("%s, %s–%s resident", state, formatPct(lo), formatPct(hi))
}

func formatPct(p float64) string {
	if p >= 99.95 || p == 0 {
		return fmt.Sprintf("%.0f%%", p)
	}
	return fmt.Sprintf("%.1f%%", p)
}
