package folio

import (
	"encoding/binary"
	"testing"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/readpath"
	"github.com/foliolog/folio/record"
)

// BenchmarkPeerSequentialLog is BenchmarkPeerSequential one layer down, as
// peerbench's folio-log adapter reads W3: Log.Read of 1 MiB, record.Parse
// of each batch (which checks its CRC), its records decoded without a
// second check. The same peerRecs records, written as
// BenchmarkPeerAppendLog writes them; each record's bytes 0-7 hold its
// offset and are checked. The consumer's cost over the log is the ratio of
// the two.
func BenchmarkPeerSequentialLog(b *testing.B) {
	l, err := log.Open(nil, b.TempDir(), &log.Options{FlushPolicy: log.FlushNone}, log.State{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	newPeerLogWriter(b).append(b, l, peerRecs())
	end := int64(peerRecs())
	opts := &record.DecodeOptions{SkipCRC: true} // Parse checked it
	b.SetBytes(peerSize)
	b.ReportAllocs()
	b.ResetTimer()
	u := startUsage()
	defer func() { u.report(b, b.N) }()
	next := int64(0)
	for n := 0; n < b.N; {
		if next == end {
			next = 0
		}
		v, err := l.Read(next, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		err = readpath.Guard(func() error {
			data, err := v.Bytes()
			for err == nil && len(data) > 0 {
				var bt record.Batch
				if bt, data, err = record.Parse(data); err != nil {
					break
				}
				it := bt.Records(opts)
				for it.Next() {
					r := it.Record()
					if r.Offset() != next || binary.LittleEndian.Uint64(r.Value()) != uint64(next) {
						b.Fatalf("record at %d holds %d, want %d", r.Offset(), binary.LittleEndian.Uint64(r.Value()), next)
					}
					next++
					n++
				}
				err = it.Err()
				it.Close()
			}
			return err
		})
		v.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
}
