package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/foliolog/folio"
)

// folio console serves the page beside the application that holds the
// directory, and stops on interrupt.
func TestConsoleCommand(t *testing.T) {
	dir := t.TempDir()
	app, err := folio.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.CreateTopic("orders", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	p, err := app.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Produce(context.Background(), &folio.Record{Topic: "orders", Value: []byte("first order")}); err != nil {
		t.Fatal(err)
	}
	p.Close()

	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(env{ctx: ctx, stdin: strings.NewReader(""), stdout: pw, stderr: &stderr}, []string{"console", "-dir", dir, "-http", "127.0.0.1:0"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v; stderr %s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("first line %q names no address", line)
	}
	url := strings.Fields(line[i:])[0]
	resp, err := http.Get(url + "records?topic=orders")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "first order") {
		t.Fatalf("%d:\n%s", resp.StatusCode, body)
	}
	interrupt()
	if code := <-exited; code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}
