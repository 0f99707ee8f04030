package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// server is a `folio serve` child process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	exited chan struct{}
	more   chan string // the lines of stdout after the first
}

// startServe starts folio serve on dir and waits for its "listening on"
// line.
func startServe(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(folioBin, append([]string{"serve", "-dir", dir, "-listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{}), more: make(chan string, 16)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
			select {
			case s.more <- sc.Text():
			default: // nobody reads them
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(s.exited)
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening on ")
		if !ok || !found {
			t.Fatalf("first line %q, want \"listening on ADDR\"; stderr: %s", line, s.stderr)
		}
		s.addr = addr
	case <-time.After(time.Minute):
		t.Fatal("no \"listening on\" line within a minute")
	}
	return s
}

func TestServeSubprocess(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, "-partitions", "2")
	if _, port, _ := net.SplitHostPort(s.addr); port == "0" {
		t.Fatalf("listening on %s: the real port was not printed", s.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("events"),
		kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < 3 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	// A second serve of the held directory fails with one line.
	r := cli(t, "", "serve", "-dir", dir, "-listen", "127.0.0.1:0")
	if r.code != exitFail || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "folio serve: ") {
		t.Fatalf("serve of a held directory: exit %d, stderr %q", r.code, r.stderr)
	}
	// The port in use: one line, exit 1.
	r = cli(t, "", "serve", "-dir", t.TempDir(), "-listen", s.addr)
	if r.code != exitFail || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "address already in use") {
		t.Fatalf("serve on a port in use: exit %d, stderr %q", r.code, r.stderr)
	}

	// SIGTERM: a clean shutdown, the clean-shutdown marker written.
	cl.Close()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatal("serve did not exit within a minute of SIGTERM")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM; stderr: %s", code, s.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, folio.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v", err)
	}
	b, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	in, err := b.DescribeTopic("events")
	if err != nil || len(in.Partitions) != 2 {
		t.Fatalf("auto-created topic: %+v, %v", in, err)
	}
}

func TestServeBadFlag(t *testing.T) {
	for _, args := range [][]string{{"-listen"}, {"-advertise", "nohost"}, {"-partitions", "0"}, {"extra"}, {"-tls-cert", "x.pem"}} {
		r := cli(t, "", append([]string{"serve", "-dir", t.TempDir()}, args...)...)
		if r.code != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
			t.Fatalf("serve %v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestServeSASL(t *testing.T) {
	r := cli(t, "pw-1\n", "sasl-user", "-user", "ann")
	if r.code != 0 || strings.Contains(r.stdout, "pw-1") || !strings.Contains(r.stdout, `"user":"ann"`) {
		t.Fatalf("sasl-user: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, t.TempDir(), "-sasl-users", users)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for pass, ok := range map[string]bool{"pw-1": true, "nope": false} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.SASL(scram.Auth{User: "ann", Pass: pass}.AsSha256Mechanism()),
			kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		short, c := context.WithTimeout(ctx, 10*time.Second)
		err = cl.ProduceSync(short, &kgo.Record{Value: []byte("x")}).FirstErr()
		c()
		cl.Close()
		if (err == nil) != ok {
			t.Fatalf("password %q: %v", pass, err)
		}
	}
}

// TestServeConsole: serve -http serves the read-only console of the
// directory it serves to Kafka clients, and prints its address.
func TestServeConsole(t *testing.T) {
	s := startServe(t, t.TempDir(), "-http", "127.0.0.1:0")
	var url string
	select {
	case line := <-s.more:
		var ok bool
		if url, ok = strings.CutPrefix(line, "console on "); !ok {
			t.Fatalf("second line %q, want \"console on URL\"", line)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no console line within a minute; stderr: %s", s.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("shown-topic"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "shown-topic") {
		t.Fatalf("GET %s: %s, the page does not show the topic a client produced to:\n%.2000s", url, resp.Status, body)
	}
	cl.Close()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatal("serve did not exit within a minute of SIGTERM")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("serve -http exited %d after SIGTERM; stderr: %s", code, s.stderr)
	}
}

// scrape GETs a Prometheus text exposition and returns the sum of the
// series of metric whose labels include every one of labels (each
// `name="value"`), and whether there was any.
func scrape(t *testing.T, url, metric string, labels ...string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%.2000s", url, resp.Status, body)
	}
	var sum float64
	found := false
lines:
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		name, rest, _ := strings.Cut(line, "{")
		if strings.HasPrefix(line, "#") || (name != metric && !strings.HasPrefix(line, metric+" ")) {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				continue lines
			}
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("series %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// TestServeMetrics: serve -http serves Prometheus /metrics of the Broker it
// serves, on its own registry with the Go and process collectors, and the
// series follow what Kafka clients do: records in rise with a produce,
// records out with a fetch, the log size with the appended bytes.
func TestServeMetrics(t *testing.T) {
	s := startServe(t, t.TempDir(), "-http", "127.0.0.1:0")
	var url string
	for url == "" {
		select {
		case line := <-s.more:
			if u, ok := strings.CutPrefix(line, "metrics on "); ok {
				url = u
			}
		case <-time.After(time.Minute):
			t.Fatalf("no \"metrics on URL\" line within a minute; stderr: %s", s.stderr)
		}
	}
	const topicLabel = `topic="metered"`
	if v, found := scrape(t, url, "folio_records_in_total", topicLabel); found && v != 0 {
		t.Fatalf("records in of a topic nobody produced to: %v", v)
	}
	for _, m := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, found := scrape(t, url, m); !found {
			t.Fatalf("/metrics has no %s: the Go and process collectors are missing", m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("metered"),
		kgo.ConsumeTopics("metered"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 7
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := scrape(t, url, "folio_records_in_total", topicLabel); v != n {
		t.Fatalf("folio_records_in_total{%s} = %v after %d records produced", topicLabel, v, n)
	}
	if v, _ := scrape(t, url, "folio_log_size_bytes", topicLabel); v <= 0 {
		t.Fatalf("folio_log_size_bytes{%s} = %v after a produce", topicLabel, v)
	}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	// The server counts a fetch before it answers it.
	if v, _ := scrape(t, url, "folio_records_out_total", topicLabel); v != n {
		t.Fatalf("folio_records_out_total{%s} = %v after a client fetched %d records", topicLabel, v, n)
	}
}
