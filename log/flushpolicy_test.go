package log

import (
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFlushPolicyText: the text form round-trips, reads the forms older
// catalogs hold (days, plain milliseconds), and refuses what it cannot
// honour; Set leaves the value alone on error.
func TestFlushPolicyText(t *testing.T) {
	for s, want := range map[string]FlushPolicy{
		"sync":              FlushSync,
		"none":              FlushNone,
		"interval:250ms":    FlushInterval(250 * time.Millisecond),
		"interval:1d12h":    FlushInterval(36 * time.Hour),
		"interval:2d":       FlushInterval(48 * time.Hour),
		"interval:1000":     FlushInterval(time.Second),
		"interval:1h30m0s":  FlushInterval(90 * time.Minute),
		"every:1000":        FlushEveryN(1000),
		"interval:1m0.5s":   FlushInterval(time.Minute + 500*time.Millisecond),
		"interval:999999ns": FlushInterval(999999),
	} {
		got, err := ParseFlushPolicy(s)
		if err != nil || got != want {
			t.Errorf("ParseFlushPolicy(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if got := FlushInterval(36 * time.Hour).String(); got != "interval:1d12h" {
		t.Errorf("String = %q", got)
	}
	for _, s := range []string{"", "sometimes", "sync:1", "none:x", "interval:", "interval:0s", "interval:-1s",
		"interval:xd", "interval:1dx", "every:0", "every:-3", "every:x", "Sync"} {
		if p, err := ParseFlushPolicy(s); err == nil {
			t.Errorf("ParseFlushPolicy(%q) = %v, want an error", s, p)
		}
	}
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 2))
	for range 1000 {
		var p FlushPolicy
		switch r.IntN(4) {
		case 0:
			p = FlushSync
		case 1:
			p = FlushNone
		case 2:
			p = FlushInterval(time.Duration(1 + r.Int64N(1<<62)))
		case 3:
			p = FlushEveryN(1 + r.Int64N(1<<62))
		}
		b, err := p.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", p, err)
		}
		var back FlushPolicy
		if err := back.UnmarshalText(b); err != nil || back != p {
			t.Fatalf("round trip of %v through %q: %v, %v", p, b, back, err)
		}
	}
	if _, err := FlushEveryN(0).MarshalText(); err == nil {
		t.Error("an invalid policy marshaled")
	}

	p := FlushEveryN(5)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&p, "flush", "")
	if err := fs.Parse([]string{"-flush", "bogus"}); err == nil || p != FlushEveryN(5) {
		t.Fatalf("a refused -flush: err %v, value %v", err, p)
	}
	js, err := json.Marshal(struct{ F FlushPolicy }{FlushInterval(time.Second)})
	if err != nil || string(js) != `{"F":"interval:1s"}` {
		t.Fatalf("json %s, %v", js, err)
	}
}
