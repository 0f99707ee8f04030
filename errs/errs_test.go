package errs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	errPkgCorrupt = errs.New("pkg: corrupt thing", errs.ErrCorrupt)
	errPkgClosed  = errs.New("pkg: closed", errs.ErrClosed)
	errPkgExists  = errs.New("pkg: already there", kerr.TopicAlreadyExists)
	errPlain      = errors.New("pkg: plain")
)

func TestNewMatchesItsClasses(t *testing.T) {
	for _, c := range []struct {
		err   error
		text  string
		is    []error
		isNot []error
	}{
		{errPkgCorrupt, "pkg: corrupt thing", []error{errs.ErrCorrupt, kerr.CorruptMessage}, []error{errs.ErrClosed}},
		{errPkgClosed, "pkg: closed", []error{errs.ErrClosed}, []error{errs.ErrCorrupt}},
		{errPkgExists, "pkg: already there", []error{kerr.TopicAlreadyExists}, []error{errs.ErrCorrupt, errs.ErrClosed}},
		{errs.New("two", nil, errPkgExists, errs.ErrClosed), "two", []error{errPkgExists, kerr.TopicAlreadyExists, errs.ErrClosed}, nil},
	} {
		if c.err.Error() != c.text {
			t.Errorf("text %q, want %q", c.err.Error(), c.text)
		}
		wrapped := fmt.Errorf("outer: %w", c.err)
		for _, target := range c.is {
			if !errors.Is(wrapped, target) {
				t.Errorf("%q does not match %q", c.text, target)
			}
		}
		for _, target := range c.isNot {
			if errors.Is(wrapped, target) {
				t.Errorf("%q matches %q", c.text, target)
			}
		}
	}
}

func TestMark(t *testing.T) {
	if errs.Mark(nil, errPkgCorrupt) != nil {
		t.Error("Mark(nil) is not nil")
	}
	if errs.Mark(errPlain) != errPlain || errs.Mark(errPlain, nil) != errPlain {
		t.Error("Mark without classes changes the error")
	}
	m := errs.Mark(fmt.Errorf("ctx: %w", errPkgExists), errPkgCorrupt)
	if m.Error() != "ctx: pkg: already there" {
		t.Errorf("text %q", m.Error())
	}
	if !errors.Is(m, errPkgCorrupt) || !errors.Is(m, errs.ErrCorrupt) || !errors.Is(m, errPkgExists) {
		t.Errorf("%v lost a class", m)
	}
	if k := errs.Kafka(m); k != kerr.TopicAlreadyExists {
		t.Errorf("Kafka(marked) = %v: the error's own code comes first", k)
	}
}

func TestCorruption(t *testing.T) {
	recordErr := errs.New("record: corrupt batch", errs.ErrCorrupt)
	for _, c := range []struct {
		name string
		err  *errs.Corruption
		text string
	}{
		{"own finding", errs.Corruptf(errPkgCorrupt, "/d/a.log", 4096, "file ends at %d", 4000),
			"/d/a.log at byte 4096: pkg: corrupt thing: file ends at 4000"},
		{"lower layer's cause", errs.Corrupt(errPkgCorrupt, "/d/a.log", 0, fmt.Errorf("%w at offset 17: crc 1, computed 2", recordErr)).AtOffset(17),
			"/d/a.log at byte 0: record: corrupt batch at offset 17: crc 1, computed 2"},
		{"whole file", errs.Corruptf(errPkgCorrupt, "/d/meta", -1, "checksum %d, want %d", 1, 2),
			"/d/meta: pkg: corrupt thing: checksum 1, want 2"},
		{"offset only", errs.Corruptf(errPkgCorrupt, "/d/t-0", -1, "key version %d", 9).AtOffset(12),
			"/d/t-0 at offset 12: pkg: corrupt thing: key version 9"},
		{"offset named by the cause", errs.Corrupt(errPkgCorrupt, "/d/t-0", -1, fmt.Errorf("%w at offset 12: crc 1, computed 2", recordErr)).AtOffset(12),
			"/d/t-0: record: corrupt batch at offset 12: crc 1, computed 2"},
		{"no cause", errs.Corrupt(nil, "/d/x", 3, nil), "/d/x at byte 3: folio: corrupt data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.err.Error(); got != c.text {
				t.Errorf("text\n%q, want\n%q", got, c.text)
			}
			wrapped := fmt.Errorf("log: read: %w", c.err)
			if !errors.Is(wrapped, errs.ErrCorrupt) {
				t.Error("does not match errs.ErrCorrupt")
			}
			if c.err.Err != nil && !errors.Is(wrapped, c.err.Err) {
				t.Error("does not match its cause")
			}
			var got *errs.Corruption
			if !errors.As(wrapped, &got) || got != c.err {
				t.Fatal("errors.As does not find the Corruption")
			}
			if errs.Kafka(wrapped) != kerr.CorruptMessage {
				t.Errorf("Kafka = %v, want CORRUPT_MESSAGE", errs.Kafka(wrapped))
			}
		})
	}
	if c := errs.Corruptf(errPkgCorrupt, "/d/a.log", 1, "x"); !errors.Is(c, errPkgCorrupt) {
		t.Error("a Corruption does not match its class")
	}
	if c := (&errs.Corruption{Path: "/p", Pos: -1, Offset: -1, Err: errPlain}); !errors.Is(c, errs.ErrCorrupt) || c.Error() != "/p: folio: corrupt data: pkg: plain" {
		t.Errorf("a literal Corruption: %q", c.Error())
	}
}

func TestKafka(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want *kerr.Error
	}{
		{"nil", nil, nil},
		{"declared code", fmt.Errorf("topic %q: %w", "t", errPkgExists), kerr.TopicAlreadyExists},
		{"a kerr value", fmt.Errorf("group %q: %w", "g", kerr.UnknownMemberID), kerr.UnknownMemberID},
		{"first in the chain", fmt.Errorf("%w: %w", errPkgClosed, kerr.CoordinatorNotAvailable), kerr.CoordinatorNotAvailable},
		{"first of two codes", fmt.Errorf("%w: %w", errPkgExists, kerr.UnknownMemberID), kerr.TopicAlreadyExists},
		{"joined", errors.Join(errPlain, errPkgExists), kerr.TopicAlreadyExists},
		{"corruption", errPkgCorrupt, kerr.CorruptMessage},
		{"ctx canceled", fmt.Errorf("wait: %w", context.Canceled), kerr.RequestTimedOut},
		{"ctx deadline", context.DeadlineExceeded, kerr.RequestTimedOut},
		{"a code beats the ctx", fmt.Errorf("%w: %w", errPkgExists, context.Canceled), kerr.TopicAlreadyExists},
		{"plain", errPlain, kerr.UnknownServerError},
		{"closed has no code", errPkgClosed, kerr.UnknownServerError},
	} {
		if got := errs.Kafka(c.err); got != c.want {
			t.Errorf("%s: Kafka = %v, want %v", c.name, got, c.want)
		}
		want := int16(0)
		if c.want != nil {
			want = c.want.Code
		}
		if got := errs.Code(c.err); got != want {
			t.Errorf("%s: Code = %d, want %d", c.name, got, want)
		}
	}
}
