package folio

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/foliolog/folio/vfs/faultfs"
)

// TestOpenReportsFirstFailingPartition: when many partitions fail to open
// alike (an open-files limit), Open's error is one line naming the first
// failing partition's file and counting the others, not one clause per
// partition; the cause stays matchable.
func TestOpenReportsFirstFailingPartition(t *testing.T) {
	dir := t.TempDir()
	b := openT(t, dir, nil)
	createTopicT(t, b, "t", TopicConfig{Partitions: 40})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fs := faultfs.New()
	fs.SetHook(func(op faultfs.Op) error {
		d := filepath.Base(filepath.Dir(op.Path))
		if strings.HasPrefix(d, "t-") && d != "t-0" && d != "t-1" && d != "t-2" && d != "t-3" && d != "t-4" &&
			(op.Kind == faultfs.OpOpen || op.Kind == faultfs.OpCreate) {
			return syscall.EMFILE
		}
		return nil
	})
	_, err := Open(dir, faultOpts(fs))
	if err == nil {
		t.Fatal("Open succeeded with 35 partitions failing")
	}
	msg := err.Error()
	t.Log(msg)
	if !errors.Is(err, syscall.EMFILE) {
		t.Errorf("%v: the cause is lost", err)
	}
	if strings.Contains(msg, "\n") || len(msg) > 1000 {
		t.Errorf("error of %d bytes over %d lines, want one short line", len(msg), strings.Count(msg, "\n")+1)
	}
	if !strings.Contains(msg, filepath.Join(dir, "t-5")) || strings.Contains(msg, "t-6") {
		t.Errorf("%q: want t-5, the first failing partition, and no other", msg)
	}
	if n := strings.Count(msg, filepath.Join(dir, "t-5", "00000000000000000000.log")); n != 1 {
		t.Errorf("%q names the failing file %d times, want once", msg, n)
	}
	if !strings.Contains(msg, "34 more partitions") {
		t.Errorf("%q: want the count of the 34 others", msg)
	}
	if !strings.Contains(msg, "raise ulimit -n") || !strings.Contains(msg, "lower Options.MaxOpenSegments") {
		t.Errorf("%q: want the limit to raise and the option to lower", msg)
	}
}
