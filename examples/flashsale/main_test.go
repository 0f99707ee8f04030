package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFlashSale runs the example with tiny sizes, twice on one directory:
// each run's services must receive exactly that run's orders, and the
// picture must show backlogs that drain to zero.
func TestFlashSale(t *testing.T) {
	dir := t.TempDir()
	for run := 1; run <= 2; run++ {
		var out bytes.Buffer
		args := []string{"-dir", dir, "-orders", "3000", "-partitions", "3", "-producers", "2",
			"-payments", "6000", "-shipping", "3000", "-refresh", "100ms"}
		if err := runFlashSale(t, args, &out); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out.String())
		}
		o := out.String()
		for _, want := range []string{
			"flash sale: 3000 orders into \"orders\" (3 partitions, flush sync)",
			"payments: handled all 3000 orders in ",
			"shipping: handled all 3000 orders in ",
			"every service received every order once, in offset order per partition",
		} {
			if !strings.Contains(o, want) {
				t.Errorf("run %d: output lacks %q:\n%s", run, want, o)
			}
		}
		// Several pictures, the last with nothing left to handle.
		frames := strings.Count(o, "partition   written")
		if frames < 3 {
			t.Errorf("run %d: %d pictures drawn, want several over the ~1 s drain", run, frames)
		}
		last := o[strings.LastIndex(o, "partition   written"):]
		rows := regexp.MustCompile(`(?m)^(\d)\s+(\d+)\s+(\d+) \S+\s+(\d+) `).FindAllStringSubmatch(last, -1)
		if len(rows) != 3 {
			t.Fatalf("run %d: last picture has %d partition rows:\n%s", run, len(rows), last)
		}
		written := 0
		for _, r := range rows {
			n, _ := strconv.Atoi(r[2])
			written += n
			if r[3] != "0" || r[4] != "0" {
				t.Errorf("run %d: partition %s still has backlog %s/%s at the end", run, r[1], r[3], r[4])
			}
		}
		if written != 3000 {
			t.Errorf("run %d: the last picture shows %d orders written this run, want 3000", run, written)
		}
		// The slower service's backlog must have been visible: the point of
		// the example is that the burst outruns it.
		if m := regexp.MustCompile(`shipping: .* peak backlog (\d+) orders`).FindStringSubmatch(o); m == nil || m[1] == "0" {
			t.Errorf("run %d: no shipping backlog was ever drawn:\n%s", run, o)
		}
	}
}

func runFlashSale(t *testing.T, args []string, out *bytes.Buffer) error {
	t.Helper()
	return run(context.Background(), args, out, out)
}

func TestFlashSaleFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-orders", "0"},
		{"-partitions", "0"},
		{"-producers", "0"},
		{"-payments", "-1"},
		{"-refresh", "0s"},
		{"-flush", "sometimes"},
		{"-bogus"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(args, "-dir", t.TempDir()), &out, &errOut)
		if code := exitCode(err); code != 2 {
			t.Errorf("flashsale %v: %v, exit status %d; want a usage error, 2", args, err, code)
		}
		if out.Len() != 0 || errOut.Len() != 0 || err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("flashsale %v: printed %q and %q, error %q; want only a one-line error", args, out.String(), errOut.String(), err)
		}
	}
}

// TestFlashSaleHelp: -h prints the flags on stderr and exits 0.
func TestFlashSaleHelp(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{h}, &out, &errOut)
		if code := exitCode(err); code != 0 {
			t.Errorf("flashsale %s: %v, exit status %d; want 0", h, err, code)
		}
		if out.Len() != 0 || !strings.HasPrefix(errOut.String(), "usage: ") || !strings.Contains(errOut.String(), "-orders") {
			t.Errorf("flashsale %s: stdout %q, stderr %q; want the flags on stderr", h, out.String(), errOut.String())
		}
	}
	if exitCode(nil) != 0 || exitCode(errors.New("disk on fire")) != 1 {
		t.Error("exitCode: success is not 0 or a failure not 1")
	}
}

// TestFlashSaleInterrupted: a run whose context ends stops its goroutines
// and says so instead of printing a summary.
func TestFlashSaleInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-dir", t.TempDir(), "-orders", "5000", "-payments", "100", "-shipping", "100", "-refresh", "20ms"}, out, out)
	}()
	// Interrupt once the first picture is out: the services, at 100
	// orders/s, are then far from done.
	for !strings.Contains(out.String(), "partition") {
		select {
		case err := <-done:
			t.Fatalf("finished before it was interrupted: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("interrupted run: %v", err)
	}
	if strings.Contains(out.String(), "every service received") {
		t.Error("an interrupted run printed the summary")
	}
}

// lockedBuffer is a bytes.Buffer the test reads while the run writes it.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
