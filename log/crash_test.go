package log

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/foliolog/folio/record"
)

// crashOpts are the options of the killed child and of the parent that
// checks its work.
func crashOpts() *Options {
	return &Options{FlushPolicy: FlushSync, SegmentBytes: 16 << 10, IndexIntervalBytes: 1024}
}

const (
	crashRunEnv = "FOLIO_LOG_CRASH_RUN"
	crashTag    = "crash"
)

// crashValue is the value of record seq of run: the parent recomputes it to
// check what the child acknowledged.
func crashValue(run, seq int64) string {
	return string(payload(fmt.Sprintf("%s%d", crashTag, run), seq, 40+int(seq%7)*30))
}

// TestHelperChild is the child process of TestCrashKill: it appends under
// FlushSync until it is killed and prints every acknowledgement.
func TestHelperChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("helper process: runs only as TestCrashKill's child")
	}
	run, err := strconv.ParseInt(os.Getenv(crashRunEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Every start is unclean as far as the child knows.
	l, err := Open(nil, dir, crashOpts(), State{})
	if err != nil {
		fmt.Printf("ERR open %v\n", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for seq := int64(0); ; {
		n := 1 + int(seq%3)
		b := makeBatchValues(t, run, seq, n)
		first, last, err := l.Append(b)
		if err != nil {
			fmt.Printf("ERR append %v\n", err)
			os.Exit(3)
		}
		// The acknowledgement goes out only after Append returned.
		fmt.Fprintf(out, "ACK %d %d %d %d\n", seq, n, first, last)
		if err := out.Flush(); err != nil {
			os.Exit(4)
		}
		seq += int64(n)
	}
}

// makeBatchValues builds n records with values crashValue(run, seq...).
func makeBatchValues(t testing.TB, run, seq int64, n int) record.Batch {
	t.Helper()
	bld, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < int64(n); i++ {
		r := record.Record{Key: []byte(fmt.Sprintf("k%d", seq+i)), Value: []byte(crashValue(run, seq+i)), Timestamp: seq + i}
		if err := bld.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCrashKill runs the child, kills it with SIGKILL after a random number
// of acknowledgements (it is then in the middle of later appends), reopens
// the log and checks that every acknowledged record is there, in order and
// intact. The runs share one directory, so each recovers from the last.
// A SIGKILL leaves the page cache to the kernel: this test checks recovery
// from a process crash and cannot see a missing fsync; the power-cut tests
// (powercut_test.go, faultfs) do.
func TestCrashKill(t *testing.T) {
	seed := testSeed(t)
	rng := newRand(seed)
	dir := t.TempDir()
	iters := 20
	if testing.Short() {
		iters = 5
	}
	acked := map[int64]string{} // offset -> value, over all runs
	var ackedEnd int64
	for run := int64(0); run < int64(iters); run++ {
		killAfter := 1 + rng.IntN(25)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, crashRunEnv+"="+strconv.FormatInt(run, 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		seen := 0
		for sc.Scan() {
			var seq, first, last int64
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "ACK %d %d %d %d", &seq, &n, &first, &last); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("run %d: child said %q", run, sc.Text())
			}
			if first < ackedEnd || last-first+1 != int64(n) {
				t.Fatalf("run %d: acknowledged offsets %d..%d after %d", run, first, last, ackedEnd)
			}
			for i := int64(0); i < int64(n); i++ {
				acked[first+i] = crashValue(run, seq+i)
			}
			ackedEnd = last + 1
			if seen++; seen == killAfter {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = cmd.Wait()
		if seen < killAfter {
			t.Fatalf("run %d: the child stopped after %d acknowledgements, before the kill", run, seen)
		}

		l, err := Open(nil, dir, crashOpts(), State{})
		if err != nil {
			t.Fatalf("run %d: reopen after SIGKILL: %v", run, err)
		}
		got := readAll(t, l, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) < ackedEnd {
			t.Fatalf("run %d (seed %d): %d records after the kill, %d acknowledged", run, seed, len(got), ackedEnd)
		}
		for i, r := range got {
			if r.offset != int64(i) {
				t.Fatalf("run %d: record %d has offset %d", run, i, r.offset)
			}
			if want, ok := acked[r.offset]; ok && r.value != want {
				t.Fatalf("run %d: record %d is %.30q, acknowledged %.30q", run, r.offset, r.value, want)
			}
		}
		// Records the child wrote but never acknowledged may survive; the
		// next run appends after them.
		if extra := int64(len(got)) - ackedEnd; extra > 0 {
			t.Logf("run %d: killed after %d acknowledgements; %d unacknowledged records survived", run, killAfter, extra)
		}
		ackedEnd = int64(len(got))
	}
	t.Logf("%d runs, %d records checked", iters, ackedEnd)
}
