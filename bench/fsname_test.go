package main

import (
	"strings"
	"testing"
)

func TestFSName(t *testing.T) {
	for _, tt := range []struct {
		magic int64
		want  string
	}{
		{0xEF53, "ext4"},
		{0x58465342, "xfs"},
		{0x01021994, "tmpfs"},
		{0x9123683E, "btrfs"},
		// f_type sign-extended from 32 bits, as some architectures return it.
		{int64(int32(-0x6EDC97C2)), "btrfs"},
		{int64(int32(-0x00ACB2BE)), "cifs"},
		{0x794C7630, "overlayfs"},
	} {
		if got := fsName(tt.magic); got != tt.want {
			t.Errorf("fsName(%#x) = %q, want %q", tt.magic, got, tt.want)
		}
	}
	if got := fsName(0x12345); !strings.Contains(got, "0x12345") {
		t.Errorf("unknown magic lost its value: %q", got)
	}
	if !volatileFS("tmpfs") || !volatileFS("ramfs") || volatileFS("ext4") {
		t.Error("volatileFS is wrong")
	}
}

func TestDescribeMachine(t *testing.T) {
	m := describeMachine(t.TempDir())
	if m.Cores < 1 || m.GOMAXPROCS < 1 || m.GoVersion == "" || m.OS == "" {
		t.Fatalf("machine lacks basics: %+v", m)
	}
	if m.Filesystem == "unknown" || m.Filesystem == "" {
		t.Errorf("filesystem of a temp dir not found: %+v", m)
	}
	line := m.line()
	for _, want := range []string{m.GoVersion, m.Filesystem, "cores"} {
		if !strings.Contains(line, want) {
			t.Errorf("machine line %q lacks %q", line, want)
		}
	}
}
