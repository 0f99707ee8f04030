package log

import (
	"errors"
	"testing"
	"time"
)

// modelBatch is one appended batch in the fuzz model.
type modelBatch struct {
	base   int64
	values []string
}

// logModel is what the log must hold: the batches from the log start on.
type logModel struct {
	batches []modelBatch
	start   int64
	end     int64
}

func (m *logModel) truncate(to int64) {
	if to < m.start {
		m.batches, m.start, m.end = nil, to, to
		return
	}
	for i, b := range m.batches {
		if b.base+int64(len(b.values)) > to {
			// The batch holding to goes whole.
			m.batches = m.batches[:i]
			m.end = b.base
			if m.end < m.start {
				// Everything left was below the start: Kafka keeps the
				// start where it was only while it is not past the end.
				m.start = m.end
			}
			return
		}
	}
}

func (m *logModel) value(off int64) (string, bool) {
	for _, b := range m.batches {
		if off >= b.base && off < b.base+int64(len(b.values)) {
			return b.values[off-b.base], true
		}
	}
	return "", false
}

// FuzzLogOps drives a log with a sequence of operations decoded from the
// input (appends, truncations, DeleteRecordsBefore, retention by size,
// clean and unclean reopens, reads) and checks it against a model after
// each one: the visible records, their offsets and values, and the
// offsets' order (start <= high watermark <= end, durable <= end).
func FuzzLogOps(f *testing.F) {
	f.Add([]byte{0, 3, 9, 0, 5, 200, 0, 1, 1, 1, 40, 6, 7})
	f.Add([]byte{0, 10, 10, 0, 10, 10, 0, 10, 10, 2, 90, 3, 4, 0, 2, 2, 5, 6, 30})
	f.Add([]byte{0, 1, 1, 1, 0, 0, 4, 4, 0, 7, 7, 2, 255, 5, 1, 3})
	f.Add([]byte{0, 200, 50, 0, 200, 50, 3, 0, 200, 50, 3, 6, 1, 5, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		dir := t.TempDir()
		o := &Options{SegmentBytes: 1024, IndexIntervalBytes: 100, MaxIndexBytes: 120, FlushPolicy: FlushNone,
			RetentionBytes: 1500, RetentionAge: -1, noBackground: true}
		l, err := Open(nil, dir, o, State{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if l != nil {
				_ = l.Close()
			}
		}()
		m := &logModel{}
		var seq int64
		arg := func(i int) int {
			if i < len(ops) {
				return int(ops[i])
			}
			return 0
		}
		for i := 0; i < len(ops); i += 3 {
			a, b := arg(i+1), arg(i+2)
			switch ops[i] % 7 {
			case 0: // append
				n, size := 1+a%6, 1+b
				base := m.end
				batch := makeBatch(t, "f", seq, n, size, seq)
				first, last, err := l.Append(batch)
				if len(batch) > l.opts.MaxBatchBytes {
					if !errors.Is(err, ErrBatchTooLarge) {
						t.Fatalf("op %d: append of %d bytes: %v", i, len(batch), err)
					}
					break
				}
				if err != nil {
					t.Fatalf("op %d append: %v", i, err)
				}
				if first != base || last != base+int64(n)-1 {
					t.Fatalf("op %d: offsets %d..%d, model %d..%d", i, first, last, base, base+int64(n)-1)
				}
				mb := modelBatch{base: base}
				for j := 0; j < n; j++ {
					mb.values = append(mb.values, string(payload("f", seq+int64(j), size)))
				}
				m.batches = append(m.batches, mb)
				m.end += int64(n)
				seq += int64(n)
			case 1: // truncate
				to := int64(0)
				if m.end > 0 {
					to = int64(a) % (m.end + 1)
				}
				if err := l.TruncateTo(to); err != nil {
					t.Fatalf("op %d truncate to %d: %v", i, to, err)
				}
				if to < m.end {
					m.truncate(to)
				}
			case 2: // delete records
				to := m.start + int64(a)%(m.end-m.start+1)
				start, err := l.DeleteRecordsBefore(to)
				if err != nil {
					t.Fatalf("op %d delete before %d: %v", i, to, err)
				}
				m.start = max(m.start, to)
				if start != m.start {
					t.Fatalf("op %d: start %d, model %d", i, start, m.start)
				}
			case 3: // retention by size
				if _, err := l.EnforceRetention(time.Now()); err != nil {
					t.Fatalf("op %d retention: %v", i, err)
				}
				s := l.LogStartOffset()
				if s < m.start || s > m.end {
					t.Fatalf("op %d: retention moved the start from %d to %d (end %d)", i, m.start, s, m.end)
				}
				m.start = s
			case 4, 5: // reopen, clean or not
				if err := l.Close(); err != nil {
					t.Fatalf("op %d close: %v", i, err)
				}
				st := l.Checkpoint()
				st.Clean = ops[i]%7 == 4
				if !st.Clean {
					st.RecoveryPoint = int64(a) % (m.end + 1)
				}
				if l, err = Open(nil, dir, o, st); err != nil {
					l = nil
					t.Fatalf("op %d reopen (%+v): %v", i, st, err)
				}
			case 6: // one read
				if m.end == m.start {
					continue
				}
				off := m.start + int64(a)%(m.end-m.start)
				v, err := l.Read(off, b)
				if err != nil {
					t.Fatalf("op %d read at %d: %v", i, off, err)
				}
				_, recs, err := decodeView(v, off)
				v.Release()
				want, _ := m.value(off)
				if err != nil || len(recs) == 0 || recs[0].offset != off || recs[0].value != want {
					t.Fatalf("op %d read at %d: %v %+v, want %.20q", i, off, err, recs, want)
				}
			}
			checkModel(t, l, m, i)
		}
	})
}

func checkModel(t *testing.T, l *Log, m *logModel, op int) {
	t.Helper()
	start, end, hw, dur := l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.DurableEndOffset()
	if start != m.start || end != m.end || hw != end || dur > end || start > hw {
		t.Fatalf("after op %d: start %d end %d hw %d durable %d; model start %d end %d", op, start, end, hw, dur, m.start, m.end)
	}
	got := readAll(t, l, start)
	if int64(len(got)) != end-start {
		t.Fatalf("after op %d: %d records in [%d, %d)", op, len(got), start, end)
	}
	for _, r := range got {
		want, ok := m.value(r.offset)
		if !ok || r.value != want {
			t.Fatalf("after op %d: offset %d holds %.20q, model %.20q (%v)", op, r.offset, r.value, want, ok)
		}
	}
	if start > 0 {
		if _, err := l.Read(start-1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("after op %d: read below the start: %v", op, err)
		}
	}
}
