package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		mode    string
		runs    int
		suites  []string
		wantErr string // substring naming the bad flag; "" = valid
	}{
		{args: nil, mode: modeDefault, runs: 5, suites: allSuites},
		{args: []string{"-quick"}, mode: modeQuick, runs: 1, suites: allSuites},
		{args: []string{"-full"}, mode: modeFull, runs: 7, suites: allSuites},
		{args: []string{"-full", "-runs", "3"}, mode: modeFull, runs: 3, suites: allSuites},
		{args: []string{"-suite", " read-paths ,read-paths"}, mode: modeDefault, runs: 5, suites: []string{suiteReadPaths}},
		{args: []string{"-suite", "all"}, mode: modeDefault, runs: 5, suites: allSuites},
		// Run order is fixed whatever order -suite lists them in.
		{args: []string{"-suite", "partitions,append,read-paths"}, mode: modeDefault, runs: 5, suites: []string{suiteReadPaths, suiteAppend, suitePartitions}},
		{args: []string{"-suite", "append", "-svg", "x.svg"}, wantErr: "-svg charts the read-paths suite"},
		{args: []string{"-quick", "-full"}, wantErr: "-quick and -full"},
		{args: []string{"-suite", "nope"}, wantErr: `-suite: unknown suite "nope"`},
		{args: []string{"-suite", ","}, wantErr: "-suite selects no suite"},
		{args: []string{"-runs", "-1"}, wantErr: "-runs"},
		{args: []string{"-runs", "100000"}, wantErr: "-runs"},
		{args: []string{"-scale", "0"}, wantErr: "-scale"},
		{args: []string{"-scale", "NaN"}, wantErr: "-scale"},
		{args: []string{"stray"}, wantErr: `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cfg, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUsage) {
					t.Fatalf("err = %v, want ErrUsage naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Mode != tt.mode || cfg.Runs != tt.runs || !slices.Equal(cfg.Suites, tt.suites) {
				t.Fatalf("cfg = %+v, want mode %s runs %d suites %v", cfg, tt.mode, tt.runs, tt.suites)
			}
		})
	}
	if _, err := parseFlags([]string{"-nosuchflag"}, io.Discard); err == nil {
		t.Error("an unknown flag parsed")
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestUsageHidesChildFlag(t *testing.T) {
	var b strings.Builder
	parseFlags([]string{"-h"}, &b)
	if !strings.Contains(b.String(), "-quick") || strings.Contains(b.String(), childFlag) {
		t.Fatalf("usage text:\n%s", b.String())
	}
	if _, ok := childAddr([]string{childFlag, "127.0.0.1:1"}); !ok {
		t.Error("child flag not recognised")
	}
	if _, ok := childAddr([]string{"-quick", childFlag}); ok {
		t.Error("child role taken from a normal command line")
	}
}

func TestScaled(t *testing.T) {
	c := &config{Scale: 0.5}
	if got := c.scaled(100, 10); got != 50 {
		t.Errorf("scaled = %d", got)
	}
	if got := c.scaled(10, 8); got != 8 {
		t.Errorf("scaled below floor = %d", got)
	}
}
