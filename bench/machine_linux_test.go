package main

import "testing"

func TestMemTotal(t *testing.T) {
	in := "MemFree:  100 kB\nMemTotal:       24576000 kB\nBuffers: 1 kB\n"
	if got := memTotal(in); got != 24576000<<10 {
		t.Errorf("memTotal = %d", got)
	}
	if memTotal("garbage") != 0 || memTotal("MemTotal:\n") != 0 || memTotal("MemTotal: x kB") != 0 {
		t.Error("memTotal accepts malformed input")
	}
}
