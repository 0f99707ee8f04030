package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress keeps one status line on stderr. It prints only when a suite
// reports a step, never from a timer: a ticking goroutine would spend CPU
// inside the windows whose CPU time the suites measure.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time

	// lineMu guards the terminal line; suites report from one goroutine,
	// but a failing run may report from another.
	lineMu sync.Mutex
	width  int
}

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, tty: tty, start: time.Now()}
}

// step shows what runs now. On a terminal it rewrites one line; into a file
// or pipe it appends lines, which a log keeps readable.
func (p *progress) step(suite, format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.lineMu.Lock()
	defer p.lineMu.Unlock()
	line := fmt.Sprintf("[%4.0fs] %s: %s", time.Since(p.start).Seconds(), suite, fmt.Sprintf(format, args...))
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = fmt.Sprintf("%*s", n, "")
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.width = len(line)
}

// done ends the status line.
func (p *progress) done() {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	p.lineMu.Lock()
	defer p.lineMu.Unlock()
	if p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
}
