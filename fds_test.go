package folio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestCreateTopicFailureRollsBack: a topic whose partition fails to open
// while it is created (here the 7th of 20 hits the open-files limit) is
// not created: the error is one line naming the failing file and the limit
// to raise, the catalog does not list the topic, its directories are gone,
// the directory reopens, and the same creation succeeds once the cause is
// gone.
func TestCreateTopicFailureRollsBack(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New()
	b := openT(t, dir, faultOpts(fs))
	createTopicT(t, b, "keep", TopicConfig{Partitions: 2})
	failing := filepath.Join(dir, "t-6", "00000000000000000000.log")
	fs.SetHook(func(op faultfs.Op) error {
		if op.Path == failing && op.Kind == faultfs.OpCreate {
			return syscall.EMFILE
		}
		return nil
	})
	_, err := b.CreateTopic("t", TopicConfig{Partitions: 20})
	fs.SetHook(nil)
	if err == nil {
		t.Fatal("CreateTopic succeeded with partition 6 failing")
	}
	msg := err.Error()
	t.Log(msg)
	if !errors.Is(err, syscall.EMFILE) {
		t.Errorf("%v: the cause is lost", err)
	}
	if strings.Contains(msg, "\n") || strings.Count(msg, failing) != 1 || !strings.Contains(msg, "raise ulimit -n") ||
		!strings.Contains(msg, "Options.MaxOpenSegments") {
		t.Errorf("%q: want one line naming %s once and the limit to raise", msg, failing)
	}
	check := func(b *Broker, when string) {
		t.Helper()
		if _, err := b.DescribeTopic("t"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("%s: DescribeTopic = %v, want ErrUnknownTopic", when, err)
		}
		infos, err := b.Topics()
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Name == "t" {
				t.Fatalf("%s: Topics lists the topic whose creation failed", when)
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "t-") {
				t.Fatalf("%s: %s left in the data directory", when, e.Name())
			}
		}
	}
	check(b, "after the failure")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, faultOpts(fs))
	check(b, "after a reopen")
	if _, err := b.DescribeTopic("keep"); err != nil {
		t.Fatal(err)
	}
	if in := createTopicT(t, b, "t", TopicConfig{Partitions: 20}); len(in.Partitions) != 20 {
		t.Fatalf("retried creation has %d partitions", len(in.Partitions))
	}
}

// TestAddPartitionsFailureRollsBack: growing a topic whose new partition
// fails to open (here the 3rd of 6 new ones hits the open-files limit)
// leaves the topic as it was, as a failed CreateTopic does: the error names
// the limit to raise, the topic keeps its partitions (in the catalog too,
// across a reopen), the new directories are gone, and the same call
// succeeds once the cause is gone.
func TestAddPartitionsFailureRollsBack(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New()
	b := openT(t, dir, faultOpts(fs))
	createTopicT(t, b, "t", TopicConfig{Partitions: 2})
	failing := filepath.Join(dir, "t-4", "00000000000000000000.log")
	fs.SetHook(func(op faultfs.Op) error {
		if op.Path == failing && op.Kind == faultfs.OpCreate {
			return syscall.EMFILE
		}
		return nil
	})
	_, err := b.AddPartitions("t", 8)
	fs.SetHook(nil)
	if err == nil {
		t.Fatal("AddPartitions succeeded with partition 4 failing")
	}
	t.Log(err)
	if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "raise ulimit -n") {
		t.Errorf("%v: want the cause and the limit to raise", err)
	}
	check := func(b *Broker, when string) {
		t.Helper()
		in, err := b.DescribeTopic("t")
		if err != nil || len(in.Partitions) != 2 || in.Config.Partitions != 2 {
			t.Fatalf("%s: %d partitions (config %d), %v; want the 2 it had", when, len(in.Partitions), in.Config.Partitions, err)
		}
		for p := 2; p < 8; p++ {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("t-%d", p))); !os.IsNotExist(err) {
				t.Fatalf("%s: t-%d left in the data directory (%v)", when, p, err)
			}
		}
	}
	check(b, "after the failure")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openT(t, dir, faultOpts(fs))
	check(b, "after a reopen")
	if in, err := b.AddPartitions("t", 8); err != nil || len(in.Partitions) != 8 {
		t.Fatalf("retried AddPartitions: %d partitions, %v", len(in.Partitions), err)
	}
}
