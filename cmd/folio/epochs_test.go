package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/topic"
)

// TestVerifyEpochCheckpoint: verify reads each partition's
// leader-epoch checkpoint: a sound one passes, a damaged one is a problem
// naming it, and the next Broker rebuilds it from the batches.
func TestVerifyEpochCheckpoint(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "c", folio.TopicConfig{Flush: folio.FlushNone}, 20, func(int) string { return "v" })
	path := filepath.Join(dir, topic.DirName("c", 0), log.EpochCheckpointFile)
	if data, err := os.ReadFile(path); err != nil || string(data) != "0\n1\n0 0\n" {
		t.Fatalf("checkpoint %q, %v", data, err)
	}
	if out := ok(t, "", "verify", "-dir", dir); !strings.Contains(out, " 0 problems, 0 notes") {
		t.Fatalf("verify:\n%s", out)
	}
	if err := os.WriteFile(path, []byte("0\n2\n0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fails(t, 1, []string{"1 problem"}, "", "verify", "-dir", dir)
	if !strings.Contains(r.stdout, "PROBLEM "+path) {
		t.Errorf("verify output:\n%s", r.stdout)
	}
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, "", "verify", "-dir", dir); !strings.Contains(out, " 0 problems, 0 notes") {
		t.Errorf("verify after the Broker rebuilt it:\n%s", out)
	}
}
