package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/segment"
)

func runDump(e env, args []string) (err error) {
	fs, dir := newFlags(e, "dump", "dump -topic T [-partition P] | dump -file path/to/00000000000000000000.log")
	name := fs.String("topic", "", "the topic whose segments to print")
	part := fs.Int("partition", -1, "the partition to print; -1 prints every partition")
	file := fs.String("file", "", "print this .log file instead, wherever it is (no data directory needed)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkPartitionFlag(*part); err != nil {
		return err
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	defer func() {
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("writing the output: %w", ferr)
		}
	}()
	dm := &dumper{w: w}
	switch {
	case *file != "" && *name != "":
		return usagef("-file and -topic exclude each other")
	case *file != "":
		base, suffix, ok := segment.ParseFileName(filepath.Base(*file))
		if !ok || suffix != segment.LogSuffix {
			return usagef("-file %s: want a segment's .log file, named by its 20-digit base offset", *file)
		}
		if err := dm.segment(*file, base, true, defaultMaxBatch); err != nil {
			return err
		}
	case *name == "":
		return usagef("-topic or -file is required")
	default:
		d, err := openDataDir(*dir)
		if err != nil {
			return err
		}
		in, err := d.topic(*name)
		if err != nil {
			return err
		}
		ps, err := partitions(in, int32(*part))
		if err != nil {
			return err
		}
		for _, p := range ps {
			pv := d.partView(in, p)
			bases, err := pv.bases()
			if err != nil {
				return err
			}
			for i, base := range bases {
				if err := dm.segment(segment.LogPath(pv.dir, base), base, i == len(bases)-1, pv.maxBatch); err != nil {
					return err
				}
			}
		}
	}
	if dm.problems > 0 {
		return fmt.Errorf("%w: %s (marked !); first: %s", ErrCorrupt, plural(dm.problems, "problem"), dm.first)
	}
	return nil
}

// dumper prints segments as Kafka's kafka-dump-log --print-data-log does,
// one line per batch and one per record, and counts the damage it finds.
type dumper struct {
	w        *bufio.Writer
	problems int
	first    string // the first problem, for the final message
}

func (dm *dumper) problem(msg string) {
	dm.problems++
	if dm.first == "" {
		dm.first = msg
	}
	fmt.Fprintf(dm.w, "! %s\n", msg)
}

// segment prints one .log file. last says whether it is its partition's
// last segment, where an incomplete batch is a write in progress rather
// than damage.
func (dm *dumper) segment(path string, base int64, last bool, maxBatch int) error {
	lf, err := openLogFile(path, base, maxBatch)
	if err != nil {
		return err
	}
	defer lf.Close()
	fmt.Fprintf(dm.w, "Dumping %s\n", path)
	fmt.Fprintf(dm.w, "Log starting offset: %d\n", base)
	for {
		b, pos, err := lf.NextRaw()
		var torn *tornError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &torn):
			if last {
				fmt.Fprintf(dm.w, "# %v (a write in progress, or a torn write that recovery cuts)\n", err)
			} else {
				dm.problem(fmt.Sprintf("%v, in a segment that is not the last", err))
			}
			return nil
		case err != nil:
			var ce *corruptError
			if !errors.As(err, &ce) {
				return err
			}
			dm.problem(fmt.Sprintf("%v; the rest of the file cannot be framed", err))
			return nil
		}
		crcValid := b.CRC() == b.ComputeCRC()
		checkErr := lf.check(b)
		dm.batchHeader(b, pos, crcValid)
		if checkErr != nil {
			dm.problem((&corruptError{Path: path, Pos: pos, Offset: b.BaseOffset(), Err: checkErr}).Error())
		}
		dm.records(path, b, pos, crcValid)
	}
}

func (dm *dumper) batchHeader(b record.Batch, pos int64, crcValid bool) {
	lastSeq := int32(-1)
	if b.BaseSequence() >= 0 {
		lastSeq = b.BaseSequence() + b.LastOffsetDelta()
	}
	tsType := "CreateTime"
	if b.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	fmt.Fprintf(dm.w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d size: %d magic: %d compresscodec: %s crcValid: %t\n",
		b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.BaseSequence(), lastSeq, b.ProducerID(), b.ProducerEpoch(),
		b.PartitionLeaderEpoch(), b.IsTransactional(), b.IsControl(), pos, tsType, b.MaxTimestamp(), b.Size(),
		b.MagicByte(), b.Codec(), crcValid)
}

// records prints a batch's records. Those of a batch whose CRC fails may
// still be sound (a flipped bit in a value); they are printed as Kafka's
// tool does, so the damage can be located, and a decoding failure there is
// part of the damage already counted.
func (dm *dumper) records(path string, b record.Batch, pos int64, crcValid bool) {
	tsType := "CreateTime"
	if b.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	it := b.Records(&record.DecodeOptions{SkipCRC: true})
	defer it.Close()
	for it.Next() {
		r := it.Record()
		seq := int64(-1)
		if b.BaseSequence() >= 0 {
			seq = int64(b.BaseSequence()) + (r.Offset() - b.BaseOffset())
		}
		var keys []string
		for h := r.Headers(); h.Next(); {
			keys = append(keys, printable(h.Key()))
		}
		fmt.Fprintf(dm.w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			r.Offset(), tsType, r.Timestamp(), lenOrNull(r.Key()), lenOrNull(r.Value()),
			seq, strings.Join(keys, ","))
		if !r.KeyIsNull() {
			fmt.Fprintf(dm.w, " key: %s", printable(r.Key()))
		}
		if !r.ValueIsNull() {
			fmt.Fprintf(dm.w, " payload: %s", printable(r.Value()))
		}
		dm.w.WriteByte('\n')
	}
	if err := it.Err(); err != nil {
		ce := &corruptError{Path: path, Pos: pos, Offset: b.BaseOffset(), Err: fmt.Errorf("records do not decode: %w", err)}
		if crcValid {
			dm.problem(ce.Error())
		} else {
			fmt.Fprintf(dm.w, "# %v\n", ce)
		}
	}
}

// printable returns b as text when it is valid UTF-8 without control
// characters, and Go-quoted otherwise, so that one record stays one line.
func printable(b []byte) string {
	if !utf8.Valid(b) {
		return strconv.Quote(string(b))
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return strconv.Quote(string(b))
		}
	}
	return string(b)
}
