package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// usage is a getrusage snapshot, or the difference of two.
type usage struct {
	User   time.Duration `json:"user_ns"`
	Sys    time.Duration `json:"sys_ns"`
	MinFlt int64         `json:"minflt"`
	MajFlt int64         `json:"majflt"`
	NVCSw  int64         `json:"nvcsw"`
	NIVCSw int64         `json:"nivcsw"`
	// InBlock counts 512-byte blocks the process asked the block layer
	// to read (Linux: read_bytes of /proc/self/io over 512): what came
	// from the disk, page-cache hits excluded, read-ahead included.
	InBlock int64 `json:"inblock"`
}

// selfUsage is getrusage(RUSAGE_SELF): the whole process, every thread.
// Suites take it around a window in which the process does nothing but the
// measured work (no setup, no garbage collection, no progress printing),
// which is what makes a process-wide figure a per-path figure.
func selfUsage() (usage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return usage{}, fmt.Errorf("bench: getrusage: %w", err)
	}
	return usage{
		User:    time.Duration(ru.Utime.Nano()),
		Sys:     time.Duration(ru.Stime.Nano()),
		MinFlt:  int64(ru.Minflt),
		MajFlt:  int64(ru.Majflt),
		NVCSw:   int64(ru.Nvcsw),
		NIVCSw:  int64(ru.Nivcsw),
		InBlock: int64(ru.Inblock),
	}, nil
}

func (u usage) sub(v usage) usage {
	return usage{
		User:    u.User - v.User,
		Sys:     u.Sys - v.Sys,
		MinFlt:  u.MinFlt - v.MinFlt,
		MajFlt:  u.MajFlt - v.MajFlt,
		NVCSw:   u.NVCSw - v.NVCSw,
		NIVCSw:  u.NIVCSw - v.NIVCSw,
		InBlock: u.InBlock - v.InBlock,
	}
}

func (u usage) add(v usage) usage {
	return usage{
		User:    u.User + v.User,
		Sys:     u.Sys + v.Sys,
		MinFlt:  u.MinFlt + v.MinFlt,
		MajFlt:  u.MajFlt + v.MajFlt,
		NVCSw:   u.NVCSw + v.NVCSw,
		NIVCSw:  u.NIVCSw + v.NIVCSw,
		InBlock: u.InBlock + v.InBlock,
	}
}

// cpu is user plus system time.
func (u usage) cpu() time.Duration { return u.User + u.Sys }

// nsPerByte is CPU nanoseconds spent per byte moved; NaN for no bytes.
func (u usage) nsPerByte(bytes int64) float64 {
	if bytes <= 0 {
		return nan()
	}
	return float64(u.cpu().Nanoseconds()) / float64(bytes)
}
