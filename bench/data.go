package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
	"github.com/foliolog/folio/vfs"
)

// span is one batch's place in a segment file.
type span struct {
	Pos        int64
	Size       int
	Records    int
	BaseOffset int64
}

// dataset is a segment .log file written for a read suite, with what a
// consumer must find in it: every figure is checked against these so that a
// read path that returned wrong bytes fails instead of looking fast.
type dataset struct {
	Dir      string // the segment's directory
	Path     string // its .log file
	Size     int64
	Batches  []span
	Records  int64
	CRC      uint32 // CRC-32C of the whole file: what a TCP reader must receive
	ValueSum uint64 // touch() over every record value: what a consumer must see
}

// dataSeed makes every run of the program write the same bytes. The values
// are random so that nothing downstream (a compressing filesystem, a
// deduplicating host) can make one path look faster by shrinking them.
const dataSeed = 0x466f6c696f // "Folio"

// batchPlan fills batches of records of recSize value bytes (null key, no
// headers) up to batchBytes each, until total bytes are written.
type batchPlan struct {
	RecSize    int
	BatchBytes int
	Total      int64
}

// writeDataset writes a segment with base offset 0 in dir through the
// segment package, as the log would: offsets ascend from 0 without gaps,
// create-time timestamps ascend, no compression. The segment is sealed
// (fsynced, indexes trimmed) and closed; readers open its .log.
func writeDataset(dir string, plan batchPlan) (*dataset, error) {
	if plan.RecSize < 0 || plan.BatchBytes < record.HeaderSize || plan.Total <= 0 {
		return nil, fmt.Errorf("%w: batch plan %+v", ErrUsage, plan)
	}
	seg, err := segment.Create(vfs.Default, dir, 0, datasetOptions(plan))
	if err != nil {
		return nil, fmt.Errorf("bench: create dataset segment: %w", err)
	}
	ds, err := fillDataset(seg, plan)
	if err == nil {
		err = seg.Seal()
	}
	if cerr := seg.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		seg.Delete()
		return nil, fmt.Errorf("bench: write dataset: %w", err)
	}
	ds.Dir, ds.Path = dir, segment.LogPath(dir, 0)
	return ds, nil
}

// datasetOptions lets one segment hold the whole plan: its batches may be
// up to 1 MiB (Kafka's default limit is 1 MiB + 12) and its size is what
// the plan writes, far below the 2 GiB a segment can hold.
func datasetOptions(plan batchPlan) *segment.Options {
	return &segment.Options{
		MaxBatchBytes:   max(plan.BatchBytes+plan.RecSize+1024, 1<<20+12),
		MaxSegmentBytes: min(plan.Total+int64(plan.BatchBytes)+int64(plan.RecSize)+(1<<20), segment.MaxSegmentBytesLimit),
	}
}

func fillDataset(seg *segment.Segment, plan batchPlan) (*dataset, error) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], dataSeed)
	binary.LittleEndian.PutUint64(seed[8:], uint64(plan.RecSize))
	rng := rand.New(rand.NewChaCha8(seed))
	b, err := record.NewBuilder(nil)
	if err != nil {
		return nil, err
	}
	ds := &dataset{}
	value := make([]byte, plan.RecSize)
	var buf []byte
	var offset int64
	const baseTime = 1_700_000_000_000 // a fixed create time keeps files identical across runs
	for ds.Size < plan.Total {
		b.Reset()
		b.BaseOffset = offset
		for b.Len() == 0 || b.Size()+plan.RecSize+32 <= plan.BatchBytes {
			fillRandom(rng, value)
			ts := int64(baseTime) + offset + int64(b.Len())
			if err := b.Append(record.Record{Value: value, Timestamp: ts}); err != nil {
				return nil, err
			}
			ds.ValueSum += touch(value)
		}
		buf, err = b.Build(buf)
		if err != nil {
			return nil, err
		}
		pos, err := seg.Append(record.Batch(buf))
		if err != nil {
			return nil, err
		}
		if pos != ds.Size {
			return nil, fmt.Errorf("%w: segment put batch %d at %d, expected %d", ErrMismatch, len(ds.Batches), pos, ds.Size)
		}
		ds.CRC = crc32.Update(ds.CRC, castagnoli, buf)
		n := b.Len()
		ds.Batches = append(ds.Batches, span{Pos: pos, Size: len(buf), Records: n, BaseOffset: offset})
		ds.Size += int64(len(buf))
		ds.Records += int64(n)
		offset += int64(n)
	}
	return ds, nil
}

// checkFetchPlan proves that plan is what the segment's own Read returns
// for fetches of maxBytes: same positions, same lengths. The timed runs then
// read by position, leaving the (identical) index lookup out of the figures.
func checkFetchPlan(ds *dataset, plan []fetch, maxBytes int) error {
	seg, err := segment.Open(vfs.Default, ds.Dir, 0, nil)
	if err != nil {
		return fmt.Errorf("bench: open dataset segment: %w", err)
	}
	defer seg.Close()
	bi := 0
	for _, f := range plan {
		for bi < len(ds.Batches) && ds.Batches[bi].Pos < f.Pos {
			bi++
		}
		if bi == len(ds.Batches) || ds.Batches[bi].Pos != f.Pos {
			return fmt.Errorf("%w: fetch at %d starts on no batch", ErrMismatch, f.Pos)
		}
		v, err := seg.Read(ds.Batches[bi].BaseOffset, maxBytes, -1)
		if err != nil {
			if v != nil {
				v.Release()
			}
			return fmt.Errorf("bench: segment read at offset %d: %w", ds.Batches[bi].BaseOffset, err)
		}
		pos, n := v.Pos(), v.Len()
		v.Release()
		if pos != f.Pos || n != f.Len {
			return fmt.Errorf("%w: segment.Read(%d, %d) gives [%d, +%d), the plan [%d, +%d)",
				ErrMismatch, ds.Batches[bi].BaseOffset, maxBytes, pos, n, f.Pos, f.Len)
		}
	}
	return nil
}

// newRand is a deterministic generator for payloads.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, dataSeed)) }

func fillRandom(rng *rand.Rand, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, rng.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// touch reads every byte of b and folds it into a sum, the work an
// in-process consumer does with each value: it makes every page of a
// mapping be faulted in and every cache line be loaded, and its result
// proves the bytes were the right ones.
func touch(b []byte) uint64 {
	var s uint64
	for len(b) >= 8 {
		s += binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		s += uint64(c)
	}
	return s
}

// fetch is one read of whole batches: [Pos, Pos+Len).
type fetch struct {
	Pos int64
	Len int
}

// fetchPlan cuts the batches into fetches of at most maxBytes each, with at
// least one whole batch even above the limit: what a Kafka fetch of
// max.partition.fetch.bytes returns from one segment.
func fetchPlan(batches []span, maxBytes int) []fetch {
	var out []fetch
	for i := 0; i < len(batches); {
		f := fetch{Pos: batches[i].Pos, Len: batches[i].Size}
		i++
		for i < len(batches) && f.Len+batches[i].Size <= maxBytes {
			f.Len += batches[i].Size
			i++
		}
		out = append(out, f)
	}
	return out
}
