package record

import (
	"errors"
	"strings"
	"testing"

	"github.com/foliolog/folio/errs"
)

// TestCorruptionIsOneClass: every kind of damage a batch can carry is an
// error matching ErrCorrupt and the shared errs.ErrCorrupt, whose text
// names the batch's offset once and says "corrupt" once.
func TestCorruptionIsOneClass(t *testing.T) {
	good := mustBuild(t, CodecNone, []Record{{Value: []byte("v"), Timestamp: 1}, {Value: []byte("w"), Timestamp: 2}},
		func(b *Builder) { b.BaseOffset = 1234 })
	mod := func(f func(b Batch) Batch) Batch { return f(good.Clone()) }
	for _, c := range []struct {
		name  string
		b     Batch
		parse bool // damage Parse sees; otherwise only decoding records does
	}{
		{"bad magic", mod(func(b Batch) Batch { b[offMagic] = 3; return b }), true},
		{"flipped payload byte", mod(func(b Batch) Batch { b[len(b)-1] ^= 0xff; return b }), true},
		{"bad codec", mod(func(b Batch) Batch { b[offAttributes+1] |= 7; b.updateCRC(); return b }), false},
		{"record count too high", mod(func(b Batch) Batch { b[offRecordCount+3] = 99; b.updateCRC(); return b }), false},
		{"record framing", mod(func(b Batch) Batch { b[HeaderSize] = 0x7f; b.updateCRC(); return b }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.parse {
				_, _, err = Parse(c.b)
			} else {
				if _, _, perr := Parse(c.b); perr != nil {
					t.Fatalf("Parse: %v", perr)
				}
				_, err = tryDecodeAll(c.b, nil)
			}
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errs.ErrCorrupt) {
				t.Fatalf("%v: not ErrCorrupt and errs.ErrCorrupt", err)
			}
			msg := err.Error()
			if strings.Count(msg, "corrupt") != 1 || strings.Count(msg, "1234") > 1 {
				t.Errorf("%q: says corrupt or the offset more than once", msg)
			}
			if c.name == "bad codec" && !errors.Is(err, ErrUnknownCodec) {
				t.Errorf("%q: not ErrUnknownCodec", msg)
			}
			if c.name != "bad magic" && !strings.Contains(msg, "at offset 1234") {
				t.Errorf("%q does not name the batch's offset", msg)
			}
		})
	}
}
