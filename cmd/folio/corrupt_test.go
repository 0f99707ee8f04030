package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// batchAt is a batch found by scanning a .log file in a test.
type batchAt struct {
	pos         int64
	base, last  int64
	size        int
	maxTimestmp int64
}

// scanLog lists the batches of a .log with record.Parse, independently of
// the code under test.
func scanLog(t *testing.T, path string) []batchAt {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []batchAt
	pos := int64(0)
	for len(data) > 0 {
		b, rest, err := record.Parse(data)
		if err != nil {
			t.Fatalf("%s at %d: %v", path, pos, err)
		}
		out = append(out, batchAt{pos, b.BaseOffset(), b.LastOffset(), b.Size(), b.MaxTimestamp()})
		pos += int64(b.Size())
		data = rest
	}
	return out
}

func segmentFiles(t *testing.T, dir string) []int64 {
	t.Helper()
	bases, err := segmentBases(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bases
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptSegment damages one batch in the middle of a partition:
// verify names the file and position and exits non-zero, consume prints
// exactly the records before the damage and stops there naming it, dump
// shows the batch with crcValid false, and reads that start beyond the
// damage are unaffected.
func TestCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	const n = 600
	long := strings.Repeat("y", 200)
	fill(t, dir, "c", folio.TopicConfig{SegmentBytes: 64 << 10, Flush: folio.FlushNone}, n, func(i int) string { return "v" + strconv.Itoa(i) + long })
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	bases := segmentFiles(t, pdir)
	if len(bases) < 3 {
		t.Fatalf("%d segments; the test needs 3", len(bases))
	}
	victim := segment.LogPath(pdir, bases[1])
	batches := scanLog(t, victim)
	bad := batches[5]
	flipByte(t, victim, bad.pos+record.HeaderSize+20) // inside the record's value
	where := fmt.Sprintf("%s: position %d (batch at offset %d)", victim, bad.pos, bad.base)

	r := fails(t, 1, []string{"corrupt", victim, "crc"}, "", "verify", "-dir", dir)
	// The batch's offset is said once: by the record layer's cause.
	verifyWhere := fmt.Sprintf("%s: position %d: record: corrupt batch at offset %d", victim, bad.pos, bad.base)
	if !regexp.MustCompile(`(?m)^PROBLEM ` + regexp.QuoteMeta(verifyWhere) + `: crc [0-9a-f]{8}, computed [0-9a-f]{8}$`).MatchString(r.stdout) {
		t.Errorf("verify does not name the damaged batch once (%s):\n%s", verifyWhere, r.stdout)
	}
	if strings.Count(r.stdout, "PROBLEM") != 1 {
		t.Errorf("verify reports other problems too:\n%s", r.stdout)
	}

	r = fails(t, 1, []string{where, "crc"}, "", "consume", "-dir", dir, "-topic", "c", "-e", "-f", `%o\n`)
	var want strings.Builder
	for i := int64(0); i < bad.base; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if r.stdout != want.String() {
		t.Errorf("consume printed %d records before the damage at offset %d, want all of them and nothing after", len(lines(r.stdout)), bad.base)
	}

	r = fails(t, 1, []string{"corrupt", where}, "", "dump", "-dir", dir, "-topic", "c", "-partition", "0")
	if !strings.Contains(r.stdout, fmt.Sprintf("baseOffset: %d lastOffset: %d ", bad.base, bad.last)) ||
		!strings.Contains(r.stdout, fmt.Sprintf("position: %d ", bad.pos)) ||
		strings.Count(r.stdout, "crcValid: false") != 1 || strings.Count(r.stdout, "crcValid: true") != n-1 {
		t.Errorf("dump does not show the one bad batch among %d", n)
	}

	// Readers that do not cross the damage are unaffected.
	after := strconv.FormatInt(bad.last+1, 10)
	got := ok(t, "", "consume", "-dir", dir, "-topic", "c", "-e", "-offset", after, "-f", `%o\n`)
	if l := lines(got); len(l) != n-int(bad.last)-1 || l[0] != after {
		t.Errorf("consume from %s after the damage: %d records", after, len(l))
	}
}

// TestCorruptIndexAndMetadata: an index entry that does not match its log,
// and a catalog that fails its checksum, are problems verify names.
func TestCorruptIndexAndMetadata(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{SegmentBytes: 64 << 10, Flush: folio.FlushNone}, 400, func(i int) string { return strings.Repeat("z", 200) })
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	base := segmentFiles(t, pdir)[0]
	idx := segment.IndexPath(pdir, base)
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 3*8 {
		t.Fatalf("index of %d bytes; the test needs entries", len(data))
	}
	// Entry 1 now points 7 bytes into its batch.
	pos := binary.BigEndian.Uint32(data[8+4:])
	binary.BigEndian.PutUint32(data[8+4:], pos+7)
	if err := os.WriteFile(idx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"1 problem in", idx, "entry 1"}, "", "verify", "-dir", dir)
	if !strings.Contains(r.stdout, fmt.Sprintf("PROBLEM %s: entry 1 (position 8): ", idx)) || !strings.Contains(r.stdout, fmt.Sprintf("position %d) is not the start of a batch", pos+7)) {
		t.Errorf("verify output:\n%s", r.stdout)
	}
	// Reads do not trust the entry: consume still finds every record.
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "c", "-e", "-offset", "100", "-f", `%o\n`); len(lines(got)) != 300 || lines(got)[0] != "100" {
		t.Errorf("consume past a bad index entry: %d records", len(lines(got)))
	}

	cat := filepath.Join(dir, topic.CatalogFile)
	flipByte(t, cat, 30)
	fails(t, 1, []string{"corrupt", topic.CatalogFile, dir, "crc"}, "", "topics", "list", "-dir", dir)
	fails(t, 1, []string{"corrupt", topic.CatalogFile, dir}, "", "consume", "-dir", dir, "-topic", "c", "-e")
	r = fails(t, 1, []string{"corrupt", cat}, "", "verify", "-dir", dir)
	if !strings.Contains(r.stdout, "PROBLEM "+cat) {
		t.Errorf("verify output:\n%s", r.stdout)
	}
}

// TestTornTail: a last batch cut short, as a crash or a write in progress
// leaves it, ends the log for readers without an error; verify notes it,
// and calls it a problem only in a directory that was closed cleanly.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone}, 20, func(i int) string { return "v" + strconv.Itoa(i) })
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	bases := segmentFiles(t, pdir)
	last := segment.LogPath(pdir, bases[len(bases)-1])
	batches := scanLog(t, last)
	cut := batches[len(batches)-1]
	if err := os.Truncate(last, cut.pos+int64(cut.size)-3); err != nil {
		t.Fatal(err)
	}
	if got := ok(t, "", "consume", "-dir", dir, "-topic", "c", "-e"); got != vals(0, int(cut.base)) {
		t.Errorf("consume with a torn tail: %q", got)
	}
	if got := ok(t, "", "topics", "describe", "-dir", dir, "-topic", "c"); !strings.Contains(got, fmt.Sprintf("EndOffset: %d\t", cut.base)) {
		t.Errorf("describe with a torn tail: %s", got)
	}
	// Closed cleanly, yet torn: damage.
	r := fails(t, 1, []string{"corrupt", last}, "", "verify", "-dir", dir)
	if !strings.Contains(r.stdout, fmt.Sprintf("position %d: incomplete batch", cut.pos)) {
		t.Errorf("verify:\n%s", r.stdout)
	}
	// After a crash (no clean-shutdown marker), a torn tail is expected.
	if err := os.Remove(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "", "verify", "-dir", dir)
	if !strings.Contains(out, "NOTE") || !strings.Contains(out, "incomplete batch") || !strings.Contains(out, " 0 problems") {
		t.Errorf("verify after a crash:\n%s", out)
	}
	// The next Broker cuts the tail and appends after it.
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, "", "verify", "-dir", dir); !strings.Contains(out, " 0 problems, 0 notes") {
		t.Errorf("verify after recovery:\n%s", out)
	}
}

// TestTornMiddleSegment: an incomplete batch at the end of a segment that
// is not the last cannot be a write in progress (the writer has moved on):
// consume stops there with an error, verify reports it.
func TestTornMiddleSegment(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{SegmentBytes: 8 << 10, Flush: folio.FlushNone}, 200, func(i int) string { return "v" + strconv.Itoa(i) + strings.Repeat("-", 100) })
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	bases := segmentFiles(t, pdir)
	if len(bases) < 3 {
		t.Fatalf("%d segments; the test needs 3", len(bases))
	}
	mid := segment.LogPath(pdir, bases[1])
	batches := scanLog(t, mid)
	cut := batches[len(batches)-1]
	if err := os.Truncate(mid, cut.pos+10); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{mid, fmt.Sprintf("position %d", cut.pos), "incomplete batch", "not the last"}, "", "consume", "-dir", dir, "-topic", "c", "-e", "-f", `%o\n`)
	if got := len(lines(r.stdout)); got != int(cut.base) {
		t.Errorf("consume printed %d records before the torn batch at offset %d", got, cut.base)
	}
	r = fails(t, 1, []string{"corrupt", mid}, "", "verify", "-dir", dir)
	if !strings.Contains(r.stdout, "PROBLEM "+mid+fmt.Sprintf(": position %d: incomplete batch", cut.pos)) {
		t.Errorf("verify:\n%s", r.stdout)
	}
}

// TestLeftoverSwapIsAProblem: a .log.swap beside an intact segment that no
// swap-commit marker vouches for (here a truncated copy of the segment) is
// a problem verify names, not a note; after a writing open the live
// segment is kept whole, the swap is gone and verify is clean.
func TestLeftoverSwapIsAProblem(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	long := strings.Repeat("y", 200)
	fill(t, dir, "s", folio.TopicConfig{SegmentBytes: 16 << 10, Flush: folio.FlushNone}, n, func(i int) string { return "v" + strconv.Itoa(i) + long })
	pdir := filepath.Join(dir, topic.DirName("s", 0))
	bases := segmentFiles(t, pdir)
	if len(bases) < 3 {
		t.Fatalf("%d segments; the test needs 3", len(bases))
	}
	data, err := os.ReadFile(segment.LogPath(pdir, bases[1]))
	if err != nil {
		t.Fatal(err)
	}
	swap := filepath.Join(pdir, segment.FileName(bases[1], ".log.swap"))
	if err := os.WriteFile(swap, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"corrupt", swap}, "", "verify", "-dir", dir)
	if !regexp.MustCompile(`(?m)^PROBLEM ` + regexp.QuoteMeta(swap) + `: .*swap-commit marker`).MatchString(r.stdout) {
		t.Errorf("verify does not report the leftover swap as a problem naming it:\n%s", r.stdout)
	}
	// A writing open (produce) keeps the live segment, drops the swap and
	// warns naming it.
	if r := cli(t, "last\n", "produce", "-dir", dir, "-topic", "s", "-partition", "0"); r.code != 0 ||
		!strings.Contains(r.stderr, "WARN") || !strings.Contains(r.stderr, swap) || !strings.Contains(r.stderr, "discarded") {
		t.Fatalf("produce: exit %d, stderr %q; want a warning naming the discarded swap", r.code, r.stderr)
	}
	got := lines(ok(t, "", "consume", "-dir", dir, "-topic", "s", "-e", "-f", `%o\n`))
	if len(got) != n+1 || got[n] != strconv.Itoa(n) {
		t.Fatalf("after the open: %d records (last %q), want %d, the last at offset %d", len(got), got[len(got)-1], n+1, n)
	}
	if _, err := os.Stat(swap); !os.IsNotExist(err) {
		t.Fatalf("the swap survived the open: %v", err)
	}
	ok(t, "", "verify", "-dir", dir)
}

// TestHoleAndStraySegment: a segment deleted from the middle of a
// partition and a zero-filled segment past its end are problems verify
// names with the range they cost; a writing open after an unclean
// shutdown fills the hole, removes the stray, keeps every other record at
// its offset, appends right after the real end, and verify is clean
// afterwards.
func TestHoleAndStraySegment(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	long := strings.Repeat("y", 200)
	fill(t, dir, "h", folio.TopicConfig{SegmentBytes: 16 << 10, Flush: folio.FlushNone}, n, func(i int) string { return "v" + strconv.Itoa(i) + long })
	pdir := filepath.Join(dir, topic.DirName("h", 0))
	bases := segmentFiles(t, pdir)
	if len(bases) < 4 {
		t.Fatalf("%d segments; the test needs 4", len(bases))
	}
	for _, suf := range []string{".log", ".index", ".timeindex"} {
		if err := os.Remove(filepath.Join(pdir, segment.FileName(bases[1], suf))); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(pdir, segment.FileName(99999, ".log"))
	if err := os.WriteFile(stray, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"corrupt"}, "", "verify", "-dir", dir)
	hole := fmt.Sprintf("PROBLEM %s: missing: offsets %d to %d are in no segment", segment.LogPath(pdir, bases[1]), bases[1], bases[2]-1)
	if !strings.Contains(r.stdout, hole) || !strings.Contains(r.stdout, "PROBLEM "+stray) {
		t.Errorf("verify does not name the hole (%q) and the stray:\n%s", hole, r.stdout)
	}
	// An unclean shutdown: a writing open scans every segment.
	if err := os.Remove(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, folio.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "last\n", "produce", "-dir", dir, "-topic", "h", "-partition", "0"); r.code != 0 ||
		!strings.Contains(r.stderr, segment.FileName(bases[2], ".log")) || !strings.Contains(r.stderr, stray) {
		t.Fatalf("produce: exit %d, stderr %q; want warnings naming the hole and the stray", r.code, r.stderr)
	}
	got := lines(ok(t, "", "consume", "-dir", dir, "-topic", "h", "-e", "-f", `%o\n`))
	var want []string
	for i := int64(0); i <= n; i++ {
		if i < bases[1] || i >= bases[2] {
			want = append(want, strconv.FormatInt(i, 10))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the open: offsets %v\nwant %v", got, want)
	}
	ok(t, "", "verify", "-dir", dir)
}
