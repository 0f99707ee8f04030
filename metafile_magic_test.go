package folio

import (
	"errors"
	"testing"
)

// TestDamagedMagicIsCorrupt: a metadata file whose magic number is
// damaged (one flipped byte, issue 11's damage test, seed 501: Open
// refused folio.format as an unknown format, which IsCorrupt does not
// know) is damage, since the frame's checksum holds with the right
// magic; a frame of another file kind, or a file that is no frame, is
// still an unknown format.
func TestDamagedMagicIsCorrupt(t *testing.T) {
	frame := encodeMeta(formatMagic, 1, []byte("payload of the format file"))
	for i := range 4 {
		data := append([]byte(nil), frame...)
		data[i] ^= 0x20
		_, _, err := decodeMeta(FormatFile, formatMagic, data)
		if !IsCorrupt(err) || errors.Is(err, ErrUnknownFormat) {
			t.Fatalf("magic byte %d flipped: %v, want a corruption", i, err)
		}
	}
	other := encodeMeta(checkpointMagic, 1, []byte("payload of the format file"))
	if _, _, err := decodeMeta(FormatFile, formatMagic, other); !errors.Is(err, ErrUnknownFormat) || IsCorrupt(err) {
		t.Fatalf("another kind's frame: %v, want ErrUnknownFormat", err)
	}
	foreign := []byte("not a folio file at all, just some text")
	if _, _, err := decodeMeta(FormatFile, formatMagic, foreign); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("a foreign file: %v, want ErrUnknownFormat", err)
	}
	if _, _, err := decodeMeta(FormatFile, formatMagic, frame); err != nil {
		t.Fatal(err)
	}
}
