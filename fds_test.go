package folio

import (
	"errors"
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
