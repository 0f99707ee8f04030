package main

import (
	"fmt"
	"runtime"
	"strings"
)

// machine is what every table states about where it was measured.
type machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemBytes   uint64 `json:"mem_bytes"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Kernel     string `json:"kernel"`
	Virtual    bool   `json:"virtual"`
	DataDir    string `json:"data_dir"`
	Filesystem string `json:"filesystem"`
	PageSize   int    `json:"page_size"`
	// LoadAvg is the 1, 5 and 15 minute load average when the run began:
	// on a shared machine it says how much else was competing for the CPUs.
	LoadAvg string `json:"load_avg,omitempty"`
}

// describeMachine gathers the machine description for dir. Parts the
// platform cannot tell are left "unknown" rather than guessed.
func describeMachine(dir string) machine {
	m := machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		DataDir:    dir,
		CPU:        "unknown",
		Kernel:     "unknown",
		Filesystem: "unknown",
	}
	fillPlatform(&m, dir)
	return m
}

// line is the one-line form each table repeats.
func (m machine) line() string {
	var parts []string
	cpu := m.CPU
	if m.Virtual {
		cpu += " (virtual machine)"
	}
	parts = append(parts, cpu)
	parts = append(parts, fmt.Sprintf("%d cores (GOMAXPROCS %d)", m.Cores, m.GOMAXPROCS))
	if m.MemBytes > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GiB RAM", float64(m.MemBytes)/(1<<30)))
	}
	parts = append(parts, m.GoVersion, m.Kernel)
	parts = append(parts, "data dir on "+m.Filesystem)
	if m.LoadAvg != "" {
		parts = append(parts, "load average "+m.LoadAvg+" at start")
	}
	return strings.Join(parts, ", ")
}
