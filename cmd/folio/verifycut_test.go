package main

import (
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
