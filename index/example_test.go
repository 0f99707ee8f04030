package index_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/foliolog/folio/index"
)

// The active segment appends an entry every few KiB of log, looks up the
// position to start scanning from, and seals the index when the segment
// rolls.
func ExampleOpenOffset() {
	dir, err := os.MkdirTemp("", "index-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, fmt.Sprintf("%020d.index", 1000))

	x, err := index.OpenOffset(nil, path, 1000, true, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Batches starting at offsets 1000, 1040, 1075 sit at these positions.
	for _, e := range []index.OffsetEntry{{Offset: 1000, Position: 0}, {Offset: 1040, Position: 4113}, {Offset: 1075, Position: 8290}} {
		if err := x.Append(e.Offset, e.Position); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("scan for 1050 from", x.Lookup(1050))
	fmt.Println("scan for 999 from", x.Lookup(999))

	if err := x.Seal(); err != nil {
		log.Fatal(err)
	}
	fi, _ := os.Stat(path)
	fmt.Println("sealed:", x.Entries(), "entries,", fi.Size(), "bytes, writable:", x.Writable())
	if err := x.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// scan for 1050 from {1040 4113}
	// scan for 999 from {1000 0}
	// sealed: 3 entries, 24 bytes, writable: false
}

// The time index answers "where do records at or after t start?": look up
// the last entry at or below t, then scan forward from its offset.
func ExampleOpenTime() {
	dir, err := os.MkdirTemp("", "index-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	x, err := index.OpenTime(nil, filepath.Join(dir, "00000000000000000000.timeindex"), 0, true, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	for _, e := range []index.TimeEntry{{Timestamp: 1_700_000_000_000, Offset: 10}, {Timestamp: 1_700_000_000_500, Offset: 52}, {Timestamp: 1_700_000_000_400, Offset: 60}} {
		if err := x.Append(e.Timestamp, e.Offset); err != nil { // the last is skipped: not a new maximum
			log.Fatal(err)
		}
	}
	fmt.Println(x.Entries(), "entries")
	fmt.Println(x.Lookup(1_700_000_000_499))
	fmt.Println(x.Lookup(1_600_000_000_000))
	// Output:
	// 2 entries
	// {1700000000000 10}
	// {-1 0}
}
