package main

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/foliolog/folio/record"
)

// oneRecord builds a batch holding r at offset 42 and returns its view,
// valid while the batch is.
func oneRecord(t testing.TB, r record.Record) (record.Batch, record.RecordView) {
	t.Helper()
	bl, err := record.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	bl.BaseOffset = 42
	if err := bl.Append(r); err != nil {
		t.Fatal(err)
	}
	b, err := bl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	it := b.Records(nil)
	if !it.Next() {
		t.Fatal(it.Err())
	}
	return b, it.Record()
}

func TestFormat(t *testing.T) {
	_, full := oneRecord(t, record.Record{
		Key: []byte("k"), Value: []byte("hello"), Timestamp: 1234,
		Headers: []record.Header{{Key: "a", Value: []byte("1")}, {Key: "b"}},
	})
	_, null := oneRecord(t, record.Record{Timestamp: 5})
	_, empty := oneRecord(t, record.Record{Key: []byte{}, Value: []byte{}, Timestamp: 5})
	tests := []struct {
		format string
		rec    record.RecordView
		want   string
	}{
		{defaultFormat, full, "hello\n"},
		{`%t/%p/%o`, full, "topic/3/42"},
		{`%k=%s@%T`, full, "k=hello@1234"},
		{`[%h]`, full, "[a=1,b]"},
		{`%K,%S`, full, "1,5"},
		{`%K,%S|%k|%s|%h|`, null, "-1,-1||||"},
		{`%K,%S`, empty, "0,0"},
		{`100%% \\ \t \r \n`, full, "100% \\ \t \r \n"},
		{`no tokens`, full, "no tokens"},
		{``, full, ""},
	}
	for _, tc := range tests {
		f, err := parseFormat(tc.format)
		if err != nil {
			t.Errorf("parseFormat(%q): %v", tc.format, err)
			continue
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		fl := viewFields("topic", 3, &tc.rec)
		f.write(w, &fl)
		w.Flush()
		if buf.String() != tc.want {
			t.Errorf("format %q = %q, want %q", tc.format, buf.String(), tc.want)
		}
	}
	// A record a group member polled prints as the same record read from
	// the segment does.
	f, err := parseFormat(`%t|%p|%o|%k|%s|%T|%h|%K|%S`)
	if err != nil {
		t.Fatal(err)
	}
	var fromView, fromRecord bytes.Buffer
	w := bufio.NewWriter(&fromView)
	fl := viewFields("topic", 3, &full)
	f.write(w, &fl)
	w.Flush()
	w = bufio.NewWriter(&fromRecord)
	f.write(w, &fields{topic: "topic", partition: 3, offset: 42, timestamp: 1234, key: []byte("k"), value: []byte("hello"),
		headers: []record.Header{{Key: "a", Value: []byte("1")}, {Key: "b"}}})
	w.Flush()
	if fromView.String() != fromRecord.String() || fromView.String() != "topic|3|42|k|hello|1234|a=1,b|1|5" {
		t.Errorf("view prints %q, record prints %q", fromView.String(), fromRecord.String())
	}
	for _, bad := range []string{`%`, `\`, `%x`, `\q`, `abc%`, `%s\`} {
		if _, err := parseFormat(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("parseFormat(%q) = %v, want ErrUsage", bad, err)
		}
	}
}

// FuzzParseFormat: no format string panics the parser or the printer, and
// a format without % or \ prints itself.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{defaultFormat, `%t %p %o %k %s %T %h %K %S %%`, `\t\n\r\\`, `%`, `\`, `%z`, "plain"} {
		f.Add(s)
	}
	_, rec := oneRecord(f, record.Record{Key: []byte("k"), Value: []byte("v"), Headers: []record.Header{{Key: "h", Value: []byte("x")}}})
	f.Fuzz(func(t *testing.T, s string) {
		fm, err := parseFormat(s)
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("parseFormat(%q) = %v, not a usage error", s, err)
			}
			return
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		fl := viewFields("t", 0, &rec)
		fm.write(w, &fl)
		w.Flush()
		if !strings.ContainsAny(s, `%\`) && buf.String() != s {
			t.Fatalf("literal format %q printed %q", s, buf.String())
		}
	})
}

func TestParseStart(t *testing.T) {
	pb := partBounds{Start: 10, End: 20}
	pv := &partView{topic: "t"}
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"beginning", 10, false}, {"earliest", 10, false}, {"end", 20, false}, {"latest", 20, false},
		{"15", 15, false}, {"10", 10, false}, {"20", 20, false}, {"-3", 17, false}, {"-50", 10, false},
		{"9", 0, true}, {"21", 0, true},
	}
	for _, tc := range tests {
		sp, err := parseStart(tc.in)
		if err != nil {
			t.Errorf("parseStart(%q): %v", tc.in, err)
			continue
		}
		got, err := sp.resolve(pv, pb)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("-offset %s in [10, 20] = %d, %v", tc.in, got, err)
		}
	}
	sp, err := parseStart("9")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.resolve(pv, pb); !errors.Is(err, ErrOffsetDeleted) {
		t.Errorf("an offset below the start: %v, want ErrOffsetDeleted", err)
	}
	for _, bad := range []string{"", "first", "1.5", "0x10"} {
		if _, err := parseStart(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("parseStart(%q) = %v, want ErrUsage", bad, err)
		}
	}
}

func TestUnescapeDelim(t *testing.T) {
	for in, want := range map[string]string{`\t`: "\t", `a\tb`: "a\tb", `\\t`: `\t`, `\n`: "\n", `::`: "::", `\`: `\`, `\x`: `\x`} {
		if got := unescapeDelim(in); got != want {
			t.Errorf("unescapeDelim(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("one\n\n"+strings.Repeat("x", 40)+"\nlast"), 16)
	for _, want := range []string{"one", "", strings.Repeat("x", 40), "last"} {
		got, err := readLine(r, 64)
		if err != nil || string(got) != want {
			t.Fatalf("readLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := readLine(r, 64); err == nil {
		t.Fatal("readLine at the end: no error")
	}
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\n"), 16)
	if _, err := readLine(r, 64); !errors.Is(err, errLineTooLong) {
		t.Errorf("a line over the limit: %v", err)
	}
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 64)+"\n"), 16)
	if got, err := readLine(r, 64); err != nil || len(got) != 64 {
		t.Errorf("a line at the limit: %d bytes, %v", len(got), err)
	}
}
