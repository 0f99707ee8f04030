package main

import (
	"bufio"
	"strconv"

	"github.com/foliolog/folio/record"
)

// defaultFormat prints each record's value on a line, as kcat does.
const defaultFormat = `%s\n`

// fmtVerb is one element of a parsed output format.
type fmtVerb byte

const (
	verbLiteral   fmtVerb = iota
	verbTopic             // %t
	verbPartition         // %p
	verbOffset            // %o
	verbKey               // %k
	verbValue             // %s
	verbTimestamp         // %T, milliseconds since the Unix epoch
	verbHeaders           // %h, key=value pairs joined by commas
	verbKeyLen            // %K, -1 for a null key
	verbValueLen          // %S, -1 for a null value
)

type fmtToken struct {
	verb fmtVerb
	lit  string
}

// recordFormat is a parsed kcat-style format string.
type recordFormat []fmtToken

// parseFormat parses kcat's format tokens: %t topic, %p partition, %o
// offset, %k key, %s value, %T timestamp (ms), %h headers, %K key length,
// %S value length, %% a percent sign, and the escapes \n, \t, \r, \\.
// Anything else after % or \ is an error, so a typo is not printed
// silently.
func parseFormat(s string) (recordFormat, error) {
	var out recordFormat
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			out = append(out, fmtToken{verb: verbLiteral, lit: string(lit)})
			lit = lit[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' && c != '\\' {
			lit = append(lit, c)
			continue
		}
		if i+1 == len(s) {
			return nil, usagef("format %q ends with a lone %q", s, c)
		}
		i++
		n := s[i]
		if c == '\\' {
			switch n {
			case 'n':
				lit = append(lit, '\n')
			case 't':
				lit = append(lit, '\t')
			case 'r':
				lit = append(lit, '\r')
			case '\\':
				lit = append(lit, '\\')
			default:
				return nil, usagef("format %q: unknown escape \\%c (known: \\n \\t \\r \\\\)", s, n)
			}
			continue
		}
		var v fmtVerb
		switch n {
		case '%':
			lit = append(lit, '%')
			continue
		case 't':
			v = verbTopic
		case 'p':
			v = verbPartition
		case 'o':
			v = verbOffset
		case 'k':
			v = verbKey
		case 's':
			v = verbValue
		case 'T':
			v = verbTimestamp
		case 'h':
			v = verbHeaders
		case 'K':
			v = verbKeyLen
		case 'S':
			v = verbValueLen
		default:
			return nil, usagef("format %q: unknown token %%%c (known: %%t %%p %%o %%k %%s %%T %%h %%K %%S %%%%)", s, n)
		}
		flush()
		out = append(out, fmtToken{verb: v})
	}
	flush()
	return out, nil
}

// fields are what a format prints of one record: a record view straight
// from a segment's bytes (plain consume), or a record a group member
// polled.
type fields struct {
	topic     string
	partition int32
	offset    int64
	timestamp int64 // Unix milliseconds
	// key and value are nil when null; a non-null empty one is empty.
	key, value []byte
	// Headers come from view when it is set, else from headers.
	view    *record.RecordView
	headers []record.Header
}

func viewFields(topicName string, partition int32, r *record.RecordView) fields {
	return fields{topic: topicName, partition: partition, offset: r.Offset(), timestamp: r.Timestamp(), key: r.Key(), value: r.Value(), view: r}
}

// write formats one record. Null keys and values print as nothing (their
// lengths, %K and %S, tell them from empty ones).
func (f recordFormat) write(w *bufio.Writer, r *fields) {
	var num [24]byte
	for _, t := range f {
		switch t.verb {
		case verbLiteral:
			w.WriteString(t.lit)
		case verbTopic:
			w.WriteString(r.topic)
		case verbPartition:
			w.Write(strconv.AppendInt(num[:0], int64(r.partition), 10))
		case verbOffset:
			w.Write(strconv.AppendInt(num[:0], r.offset, 10))
		case verbKey:
			w.Write(r.key)
		case verbValue:
			w.Write(r.value)
		case verbTimestamp:
			w.Write(strconv.AppendInt(num[:0], r.timestamp, 10))
		case verbHeaders:
			writeHeaders(w, r)
		case verbKeyLen:
			w.Write(strconv.AppendInt(num[:0], lenOrNull(r.key), 10))
		case verbValueLen:
			w.Write(strconv.AppendInt(num[:0], lenOrNull(r.value), 10))
		}
	}
}

// writeHeaders prints key=value pairs joined by commas; a null value
// prints the key alone.
func writeHeaders(w *bufio.Writer, r *fields) {
	one := func(i int, k, v []byte) {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(k)
		if v != nil {
			w.WriteByte('=')
			w.Write(v)
		}
	}
	if r.view != nil {
		h := r.view.Headers()
		for i := 0; h.Next(); i++ {
			one(i, h.Key(), h.Value())
		}
		return
	}
	for i, h := range r.headers {
		one(i, []byte(h.Key), h.Value)
	}
}

func lenOrNull(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}
