package browser_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
)

// findBrowser returns the path of an installed Chromium, or skips.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FOLIO_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed (Debian: apt-get install chromium; or set FOLIO_CHROME to its path): the browser test does not run")
	return ""
}

const evil = `<img src=x onerror="document.title='injected'">`

// TestConsoleInBrowser loads the console in headless Chromium: the page
// shows a topic a test produced to, the live lag follows a consumer that
// catches up, the record browser shows a record's value, markup in a
// record stays text, and a screenshot lands in the test's temp directory.
func TestConsoleInBrowser(t *testing.T) {
	exe := findBrowser(t)
	b, err := folio.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", folio.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := b.NewProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		v := fmt.Sprintf("order %d", i)
		if i == 7 {
			v = evil
		}
		if _, _, err := p.Produce(ctx, &folio.Record{Topic: "orders", Key: []byte(fmt.Sprint(i)), Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	gc, err := b.JoinGroup(ctx, "billing", []string{"orders"}, &folio.GroupOptions{DisableAutoCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	commit := func(off int64) {
		t.Helper()
		if err := gc.CommitOffsets(ctx, map[folio.TopicPartition]int64{{Topic: "orders", Partition: 0}: off}); err != nil {
			t.Fatal(err)
		}
	}
	commit(0)

	srv := httptest.NewServer(console.New(b, nil))
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1600),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	bctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	lag := `document.querySelector('article.group[data-group="billing"] .total-lag').textContent`
	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`article.topic[data-topic="orders"]`)),
		// The script's first poll has answered.
		chromedp.Poll[chromedp.Void](`document.getElementById("live-status").textContent.startsWith("updated")`),
	); err != nil {
		t.Fatal(err)
	}
	topicText := run(t, bctx, chromedp.Text(chromedp.CSS(`article.topic[data-topic="orders"] .summary`)))
	lagBefore := run(t, bctx, chromedp.Evaluate[string](lag))
	if !strings.Contains(topicText, "20 records") || lagBefore != "20" {
		t.Fatalf("topic summary %q, lag %q; want 20 records and lag 20", topicText, lagBefore)
	}

	// The consumer catches up; the page's polling shows it without a reload.
	commit(20)
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](lag+` === "0"`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the page's lag did not reach 0: %v", err)
	}
	if got := run(t, bctx, chromedp.Evaluate[string](`document.querySelector('article.group[data-group="billing"] tr[data-partition="0"] td.lag').textContent`)); got != "0" {
		t.Fatalf("partition 0's lag shows %q after the catch-up, want 0", got)
	}
	// A plain consumer, which commits nothing, reads the 20 records: the
	// chart's records out are reads in the serving process, so its out
	// rate moves. First the rate settles at 0 after the commit above.
	rates := `document.getElementById("live-rates").textContent`
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`/out 0\.0\//.test(`+rates+`)`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the chart's out rate did not settle at 0: %v", err)
	}
	c, err := b.NewConsumer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign(folio.Assignment{Topic: "orders", Partition: 0, Start: folio.AtOffset(0)}); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 20; {
		recs, err := c.Poll(bctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`/out [1-9]/.test(`+rates+`)`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the chart's out rate did not move after a consumer read 20 records (last %q): %v", run(t, bctx, chromedp.Evaluate[string](rates)), err)
	}
	shot := run(t, bctx, chromedp.FullScreenshot(100))
	path := filepath.Join(t.TempDir(), "console.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	if keep := os.Getenv("FOLIO_CONSOLE_SCREENSHOT"); keep != "" { // to look at it after the run
		if err := os.WriteFile(keep, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The record browser: a plain value, and one holding markup, which
	// must stay text.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/records?topic=orders&from=5"),
		chromedp.WaitVisible(chromedp.CSS(`tr.record[data-offset="5"]`)),
	); err != nil {
		t.Fatal(err)
	}
	value := run(t, bctx, chromedp.Text(chromedp.CSS(`tr.record[data-offset="5"] td.value`)))
	evilText := run(t, bctx, chromedp.Evaluate[string](`document.querySelector('tr.record[data-offset="7"] td.value').textContent`))
	imgs := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll('td img').length`))
	title := run(t, bctx, chromedp.Title())
	if strings.TrimSpace(value) != "order 5" {
		t.Fatalf("record 5 shows %q", value)
	}
	if !strings.Contains(evilText, evil) || imgs != 0 || title == "injected" {
		t.Fatalf("markup in a record: text %q, %d img elements, title %q", evilText, imgs, title)
	}
}

// run runs one action that returns a value, failing the test on error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
