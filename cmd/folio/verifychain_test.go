package main

import (
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
			dir := t.TempDir()
			fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone, SegmentBytes: 300}, 20, func(int) string { return strings.Repeat("v", 60) })
			pdir := filepath.Join(dir, topic.DirName("c", 0))
			bases, err := segmentBases(pdir)
			if err != nil || len(bases) < 3 {
				t.Fatalf("segments %v, %v: want at least 3", bases, err)
			}
			if out := ok(t, "", "verify", "-dir", dir); !strings.Contains(out, " 0 problems, 0 notes") {
				t.Fatalf("verify before the damage:\n%s", out)
			}
			base := bases[len(bases)-1]
			if tc.middle {
				base = bases[1]
			}
			path := segment.LogPath(pdir, base)
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
