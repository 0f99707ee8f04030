package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio"
)

// The test binary doubles as an application that holds a data directory:
// started with helperEnv set to a directory, it opens a Broker there and,
// with produceEnv set to a topic, appends records "v0", "v1", ... to its
// partition 0 every few milliseconds until its stdin closes.
const (
	helperEnv  = "FOLIO_CLI_TEST_HOLD_DIR"
	produceEnv = "FOLIO_CLI_TEST_PRODUCE_TOPIC"
)

func runHolder() int {
	dir := os.Getenv(helperEnv)
	b, err := folio.Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	defer b.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
		close(done)
	}()
	name := os.Getenv(produceEnv)
	if name == "" {
		fmt.Println("ready")
		<-done
		return 0
	}
	// Small segments, so that a reader following the partition crosses
	// rolls.
	if _, err := b.CreateTopic(name, folio.TopicConfig{Partitions: 2, SegmentBytes: 16 << 10}); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	p, err := b.NewProducer(&folio.ProducerOptions{ManualPartitioning: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	defer p.Close()
	fmt.Println("ready")
	for i := 0; ; i++ {
		select {
		case <-done:
			return 0
		default:
		}
		rec := &folio.Record{Topic: name, Partition: 0, Value: []byte("v" + strconv.Itoa(i))}
		if _, _, err := p.Produce(context.Background(), rec); err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			return 1
		}
		if i%20 == 19 {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// holder is a child process holding a data directory.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHolder starts a child that holds dir (producing to topic unless it
// is empty) and waits until it has the lock.
func startHolder(t *testing.T, dir, topicName string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, produceEnv+"="+topicName)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.stop(t) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("holder did not start: %q, %v; stderr: %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	return h
}

func (h *holder) pid() int { return h.cmd.Process.Pid }

// stop closes the child's stdin and waits for it to close its Broker.
func (h *holder) stop(t *testing.T) {
	if h.stdin == nil {
		return
	}
	h.stdin.Close()
	h.stdin = nil
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("holder: %v", err)
	}
}

// lockedAdvice is what the refusal of a write to a held directory says:
// that it is locked, by whom, and what the user can do instead.
func lockedAdvice(holder string) []string {
	return []string{"locked", holder, "stop that process", "use one that only reads", "consume without -group"}
}
