package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

// TestVerifyNamesSegmentCutAtBoundary: a sealed segment that lost its last
// batches at a batch boundary (every file still checks out) leaves a hole
// before the next segment; verify's problem for the hole names the cut
// segment's .log too, not only the name a segment holding the hole would
// have (damage test seed 1796247735758234943, unclean/sealed.log/truncate).
func TestVerifyNamesSegmentCutAtBoundary(t *testing.T) {
	dir, pdir, bases := threeSegments(t)
	path := segment.LogPath(pdir, bases[1])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, rest, err := record.Parse(data)
	if err != nil || len(rest) == 0 {
		t.Fatalf("%s: %v, %d bytes after the first batch: want two batches", path, err, len(rest))
	}
	if err := os.Truncate(path, int64(len(b))); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
	named := false
	for _, l := range lines(r.stdout) {
		named = named || strings.HasPrefix(l, "PROBLEM") && strings.Contains(l, "missing") && strings.Contains(l, path)
	}
	if !named {
		t.Errorf("verify does not name %s in the hole it left:\n%s", path, r.stdout)
	}
}

// TestVerifyFlippedBaseOffsetOfLastBatch: a flipped high byte of the base
// offset of the last batch (outside the CRC: the batch still checks out)
// after a clean shutdown moves the log end far past the end the shutdown
// recorded; verify reports it on the .log, naming the batch's position
// (damage test seed 1796248468035443461, clean/active.log/flip).
func TestVerifyFlippedBaseOffsetOfLastBatch(t *testing.T) {
	dir, pdir, bases := threeSegments(t)
	path := segment.LogPath(pdir, bases[len(bases)-1])
	pos := flipLastBaseOffset(t, path)
	r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
	named := false
	for _, l := range lines(r.stdout) {
		named = named || strings.HasPrefix(l, "PROBLEM") && strings.Contains(l, path) && strings.Contains(l, fmt.Sprintf("position %d:", pos)) && strings.Contains(l, "clean shutdown")
	}
	if !named {
		t.Errorf("verify does not name %s at position %d:\n%s", path, pos, r.stdout)
	}
}

// TestVerifyFlippedBaseOffsetOfSealedLastBatch: a flipped byte of the base
// offset of a sealed segment's last batch (outside the CRC) makes it claim
// offsets from the next segment's base on; verify names the damaged
// segment's .log, at the batch's position, not (only) the segments after
// it as overlapping it (damage table seed 101 with the flip forced onto
// base offsets, unclean/sealed.log/flip).
func TestVerifyFlippedBaseOffsetOfSealedLastBatch(t *testing.T) {
	dir, pdir, bases := threeSegments(t)
	path := segment.LogPath(pdir, bases[0])
	pos := flipLastBaseOffset(t, path)
	r := fails(t, 1, []string{"problem"}, "", "verify", "-dir", dir)
	named := false
	for _, l := range lines(r.stdout) {
		named = named || strings.HasPrefix(l, "PROBLEM") && strings.Contains(l, path+":") && strings.Contains(l, fmt.Sprintf("position %d:", pos))
		if strings.Contains(l, "overlaps the previous segment") {
			t.Errorf("verify blames a segment after the damaged one: %s", l)
		}
	}
	if !named {
		t.Errorf("verify does not name %s at position %d:\n%s", path, pos, r.stdout)
	}
}

// flipLastBaseOffset flips a byte of the base offset of the last batch of
// the .log at path (base offset += 1<<24; the CRC does not cover it) and
// returns the batch's position.
func flipLastBaseOffset(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for p := 0; p < len(data); {
		b, _, err := record.Parse(data[p:])
		if err != nil {
			t.Fatalf("%s at %d: %v", path, p, err)
		}
		pos, p = p, p+len(b)
	}
	data[pos+4] ^= 0x01
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return pos
}
