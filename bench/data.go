package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"

	"github.com/foliolog/folio/record"
)

// span is one batch's place in a segment file.
type span struct {
	Pos     int64
	Size    int
	Records int
}

// dataset is a segment .log file written for a read suite, with what a
// consumer must find in it: every figure is checked against these so that a
// read path that returned wrong bytes fails instead of looking fast.
type dataset struct {
	Path     string
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

// writeDataset writes a segment file of plan's batches to path: offsets
// ascend from 0 without gaps, create-time timestamps ascend, no compression,
// exactly as a producer's batches land in a segment after the log assigns
// offsets.
func writeDataset(path string, plan batchPlan) (*dataset, error) {
	if plan.RecSize < 0 || plan.BatchBytes < record.HeaderSize || plan.Total <= 0 {
		return nil, fmt.Errorf("%w: batch plan %+v", ErrUsage, plan)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bench: create dataset: %w", err)
	}
	ds, err := fillDataset(f, plan)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("bench: close dataset %s: %w", path, cerr)
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	ds.Path = path
	return ds, nil
}

func fillDataset(f *os.File, plan batchPlan) (*dataset, error) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], dataSeed)
	binary.LittleEndian.PutUint64(seed[8:], uint64(plan.RecSize))
	rng := rand.New(rand.NewChaCha8(seed))
	b, err := record.NewBuilder(nil)
	if err != nil {
		return nil, fmt.Errorf("bench: builder: %w", err)
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
				return nil, fmt.Errorf("bench: append record: %w", err)
			}
			ds.ValueSum += touch(value)
		}
		buf, err = b.Build(buf)
		if err != nil {
			return nil, fmt.Errorf("bench: build batch: %w", err)
		}
		if _, err := f.Write(buf); err != nil {
			return nil, fmt.Errorf("bench: write dataset: %w", err)
		}
		ds.CRC = crc32.Update(ds.CRC, castagnoli, buf)
		n := b.Len()
		ds.Batches = append(ds.Batches, span{Pos: ds.Size, Size: len(buf), Records: n})
		ds.Size += int64(len(buf))
		ds.Records += int64(n)
		offset += int64(n)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("bench: sync dataset: %w", err)
	}
	return ds, nil
}

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
