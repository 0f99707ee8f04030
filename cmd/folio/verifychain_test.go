package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/topic"
)

// TestVerifyChain: a segment .log deleted, emptied or renamed to a
// transient suffix, in the middle of the chain or as its last segment, is a
// problem naming the .log that should hold the missing offsets (and the
// renamed file).
func TestVerifyChain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		middle bool // damage the second segment, else the last
		damage string
	}{
		{"middle/delete", true, "delete"},
		{"middle/empty", true, "empty"},
		{"middle/rename.deleted", true, ".deleted"},
		{"middle/rename.cleaned", true, ".cleaned"},
		{"middle/rename.swap", true, ".swap"},
		{"middle/rename.truncate", true, ".truncate"},
		{"middle/rename.tmp", true, ".tmp"},
		{"last/delete", false, "delete"},
		{"last/rename.tmp", false, ".tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, pdir, bases := threeSegments(t)
			if out := ok(t, "", "verify", "-dir", dir); !strings.Contains(out, " 0 problems, 0 notes") {
				t.Fatalf("verify before the damage:\n%s", out)
			}
			base := bases[len(bases)-1]
			if tc.middle {
				base = bases[1]
			}
			path := segment.LogPath(pdir, base)
			var err error
			switch tc.damage {
			case "delete":
				err = os.Remove(path)
			case "empty":
				err = os.Truncate(path, 0)
			default:
				err = os.Rename(path, path+tc.damage)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
			want := "PROBLEM " + path
			if !strings.Contains(r.stdout, want) {
				t.Errorf("verify does not report %s as %q:\n%s", tc.name, want, r.stdout)
			}
			if strings.HasPrefix(tc.damage, ".") && !strings.Contains(r.stdout, filepath.Base(path)+tc.damage) {
				t.Errorf("verify does not name the renamed %s:\n%s", filepath.Base(path)+tc.damage, r.stdout)
			}
		})
	}
}

// TestVerifyLengthFlipIsNotTorn: in the last segment of a directory not
// closed cleanly, an incomplete batch at the end of the .log is a note (a
// write in progress, or a torn write recovery cuts), but a batch whose
// length field was flipped past the end of the file is damage when the
// bytes prove it: whole batches follow it, or it is itself whole under the
// length the file leaves (its CRC holds). Those are problems naming the
// file; a real torn tail stays a note.
func TestVerifyLengthFlipIsNotTorn(t *testing.T) {
	for _, how := range []string{"batches follow", "last batch", "torn"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone}, 8, func(int) string { return strings.Repeat("v", 60) })
			if err := os.Remove(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
				t.Fatal(err) // as a crash leaves it
			}
			pdir := filepath.Join(dir, topic.DirName("c", 0))
			bases, err := segmentBases(pdir)
			if err != nil {
				t.Fatal(err)
			}
			path := segment.LogPath(pdir, bases[len(bases)-1])
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var pos []int
			for p := 0; p < len(data); p += int(binary.BigEndian.Uint32(data[p+8:])) + 12 {
				pos = append(pos, p)
			}
			if len(pos) < 4 {
				t.Fatalf("%d batches", len(pos))
			}
			want := "PROBLEM " + path
			switch how {
			case "batches follow":
				data[pos[1]+9] ^= 0x10 // a megabyte more: past the end
			case "last batch":
				data[pos[len(pos)-1]+10] ^= 0x04
			case "torn":
				data = data[:pos[len(pos)-1]+80]
				want = "NOTE    " + path
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := cli(t, "", "verify", "-dir", dir)
			if !strings.Contains(r.stdout, want) || how != "torn" && r.code == 0 || how == "torn" && strings.Contains(r.stdout, "PROBLEM") {
				t.Fatalf("verify after %s (exit %d), want %q:\n%s%s", how, r.code, want, r.stdout, r.stderr)
			}
		})
	}
}

// TestVerifyEmptiedActiveSegment: after an unclean shutdown an empty last
// segment is what a roll leaves, unless its indexes hold entries: then the
// records it held are lost, and verify says so, naming the .log and the
// index (the active segment of a topic and of __consumer_offsets alike go
// through the same check).
func TestVerifyEmptiedActiveSegment(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone}, 40, func(int) string { return strings.Repeat("v", 300) })
	if err := os.Remove(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
		t.Fatal(err) // as after a crash
	}
	if out := ok(t, "", "verify", "-dir", dir); strings.Contains(out, "PROBLEM") {
		t.Fatalf("verify before the damage:\n%s", out)
	}
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	bases, err := segmentBases(pdir)
	if err != nil || len(bases) != 1 {
		t.Fatalf("segments %v, %v: want one", bases, err)
	}
	path := segment.LogPath(pdir, bases[0])
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
	if want := "PROBLEM " + path + ": empty, but " + segment.IndexPath(pdir, bases[0]); !strings.Contains(r.stdout, want) {
		t.Errorf("verify does not report the emptied active segment as %q:\n%s", want, r.stdout)
	}
}

// TestVerifyBelowRecoveryPoint: after an unclean shutdown, a log ending
// below the recovery point its last checkpoint recorded lost records that
// were fsynced: a problem, even for a segment too small for an index entry
// (a __consumer_offsets partition's, say).
func TestVerifyBelowRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone}, 3, func(int) string { return "v" })
	if err := os.Remove(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
		t.Fatal(err) // as after a crash
	}
	if out := ok(t, "", "verify", "-dir", dir); strings.Contains(out, "PROBLEM") {
		t.Fatalf("verify before the damage:\n%s", out)
	}
	pdir := filepath.Join(dir, topic.DirName("c", 0))
	path := segment.LogPath(pdir, 0)
	// The .log emptied, and the indexes as a crash leaves them before
	// their first entry.
	for _, p := range []string{path, segment.IndexPath(pdir, 0), segment.TimeIndexPath(pdir, 0)} {
		if err := os.Truncate(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	if idx := indexEvidence(pdir, 0); idx != "" {
		t.Fatalf("%s has entries: the test needs a segment without", idx)
	}
	r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
	if want := "PROBLEM " + path + ": the log ends at offset 0, below the recovery point 3"; !strings.Contains(r.stdout, want) {
		t.Errorf("verify does not report the loss as %q:\n%s", want, r.stdout)
	}
}

// threeSegments makes a data directory holding topic "c" of one partition
// with 20 records in segments of 300 bytes (at least three), and returns
// the directory, the partition's directory and its segments' bases.
func threeSegments(t *testing.T) (dir, pdir string, bases []int64) {
	t.Helper()
	dir = t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone, SegmentBytes: 300}, 20, func(int) string { return strings.Repeat("v", 60) })
	pdir = filepath.Join(dir, topic.DirName("c", 0))
	bases, err := segmentBases(pdir)
	if err != nil || len(bases) < 3 {
		t.Fatalf("segments %v, %v: want at least 3", bases, err)
	}
	return dir, pdir, bases
}
