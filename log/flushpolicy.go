package log

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

type flushMode uint8

const (
	flushSync flushMode = iota // the zero value: the default
	flushNone
	flushInterval
	flushEveryN
)

// FlushPolicy says when the log fsyncs, and so what an acknowledged append
// survives. The zero value is FlushSync. Append never returns before its
// bytes are written to the file (the page cache) under any policy, so every
// policy survives a crash of the process; they differ on power loss or a
// kernel crash.
//
// It is the one flush policy type of the module: a topic's configuration
// (topic.Config.Flush) holds it and the root package names it
// folio.FlushPolicy. Its text form, which String writes and
// ParseFlushPolicy, Set (flag.Value) and UnmarshalText read, is "sync",
// "none", "interval:<duration>" or "every:<n>". Policies compare with ==.
type FlushPolicy struct {
	mode     flushMode
	interval time.Duration
	n        int64
}

var (
	// FlushSync acknowledges an append only after an fsync covers its
	// records. Concurrent appenders share fsyncs (group commit). Nothing
	// acknowledged is lost on power loss. The default.
	FlushSync = FlushPolicy{mode: flushSync}
	// FlushNone never fsyncs on the append path (Kafka's default): the
	// page cache holds the records until the kernel writes them back, a
	// segment is fsynced when it is sealed and at Close. A power cut can
	// take back any record not yet written back.
	FlushNone = FlushPolicy{mode: flushNone}
)

// FlushInterval fsyncs at most d after the first unsynced append; on power
// loss the records appended in the last d (plus one fsync's duration) may be
// lost. d must be positive.
func FlushInterval(d time.Duration) FlushPolicy {
	return FlushPolicy{mode: flushInterval, interval: d}
}

// FlushEveryN fsyncs once n records are unsynced; the append that reaches n
// waits for that fsync. With one appender a power cut loses fewer than n
// acknowledged records; with several, up to n-1 plus the records of the
// appends in flight when the count was checked. n must be positive.
func FlushEveryN(n int64) FlushPolicy {
	return FlushPolicy{mode: flushEveryN, n: n}
}

// Interval returns the interval of a FlushInterval policy, 0 for the
// others; EveryN the record count of a FlushEveryN policy, 0 for the
// others (Kafka's flush.ms and flush.messages, which the Kafka endpoint
// reports them as).
func (p FlushPolicy) Interval() time.Duration {
	if p.mode != flushInterval {
		return 0
	}
	return p.interval
}

func (p FlushPolicy) EveryN() int64 {
	if p.mode != flushEveryN {
		return 0
	}
	return p.n
}

// Validate reports a policy that FlushInterval or FlushEveryN made with a
// parameter that is not positive.
func (p FlushPolicy) Validate() error {
	switch p.mode {
	case flushSync, flushNone:
		return nil
	case flushInterval:
		if p.interval <= 0 {
			return fmt.Errorf("flush interval %v is not positive", p.interval)
		}
		return nil
	case flushEveryN:
		if p.n <= 0 {
			return fmt.Errorf("flush every %d records: the count is not positive", p.n)
		}
		return nil
	}
	return fmt.Errorf("unknown flush mode %d", p.mode)
}

// String returns the policy's text form: "sync", "none",
// "interval:<duration>" (compact units: "250ms", "1m30s", "1d") or
// "every:<n>".
func (p FlushPolicy) String() string {
	switch p.mode {
	case flushSync:
		return "sync"
	case flushNone:
		return "none"
	case flushInterval:
		return "interval:" + formatFlushDuration(p.interval)
	case flushEveryN:
		return "every:" + strconv.FormatInt(p.n, 10)
	}
	return fmt.Sprintf("FlushPolicy(%d)", p.mode)
}

// ParseFlushPolicy parses the text form String writes: sync | none |
// interval:<duration> | every:<n>. A duration is Go's syntax ("100ms",
// "1h30m"), optionally after whole days ("1d12h"), or a plain integer of
// milliseconds, as Kafka's flush.ms.
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	mode, arg, hasArg := strings.Cut(s, ":")
	var p FlushPolicy
	switch mode {
	case "sync":
		p = FlushSync
	case "none":
		p = FlushNone
	case "interval":
		d, err := parseFlushDuration(arg)
		if err != nil {
			return FlushPolicy{}, fmt.Errorf("flush %q: %w", s, err)
		}
		p = FlushInterval(d)
	case "every":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return FlushPolicy{}, fmt.Errorf("flush %q: record count: %w", s, err)
		}
		p = FlushEveryN(n)
	default:
		return FlushPolicy{}, fmt.Errorf("flush %q: want sync, none, interval:<duration> or every:<n>", s)
	}
	if (mode == "sync" || mode == "none") && hasArg {
		return FlushPolicy{}, fmt.Errorf("flush %q: %s takes no argument", s, mode)
	}
	if err := p.Validate(); err != nil {
		return FlushPolicy{}, fmt.Errorf("flush %q: %w", s, err)
	}
	return p, nil
}

// Set implements flag.Value; on error p is unchanged.
func (p *FlushPolicy) Set(s string) error {
	v, err := ParseFlushPolicy(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalText writes the text form; an invalid policy is an error.
func (p FlushPolicy) MarshalText() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads the text form, as Set.
func (p *FlushPolicy) UnmarshalText(b []byte) error { return p.Set(string(b)) }

const day = 24 * time.Hour

var flushDurationUnits = []struct {
	name string
	d    time.Duration
}{
	{"d", day}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
	{"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond},
}

// formatFlushDuration writes a positive d in units from days down
// ("1d12h", "250ms"), which parseFlushDuration reads back.
func formatFlushDuration(d time.Duration) string {
	if d <= 0 {
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
	var b strings.Builder
	for _, u := range flushDurationUnits {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// parseFlushDuration reads Go's duration syntax after optional whole days,
// or a plain integer of milliseconds.
func parseFlushDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("%s milliseconds out of range", s)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("duration %q: want [<days>d]<duration>", s)
		}
		days, s = time.Duration(n)*day, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d > math.MaxInt64-days {
		return 0, fmt.Errorf("duration %q out of range", s)
	}
	return days + d, nil
}
