package log

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foliolog/folio/segment"
)

// FuzzDirectoryStates builds a directory state from the input (a log of
// about ten segments, then operations on its files: renames to each
// transient suffix, leftover .log.swap files beside intact segments, stray
// segment files past the end or inside a segment's range, empty,
// zero-filled or garbage files, missing or garbage index files, segments
// emptied or deleted, a garbage swap-commit marker or .cleaned file) and
// opens it, clean or not. Open must succeed and never panic; every record
// of a segment whose .log no operation touched must read back at its
// offset with its bytes; the log end must lie between the end of the last
// such segment and the end the log had (never past it: no stray is
// adopted), and the next append must get the log end.
//
// A clean open trusts the middle of the chain (it opens no sealed
// segment), so for a clean open a stray inside a segment's range is put
// past the end instead; an unclean open scans every segment.
//
// Plain go test runs the seeds only; go test -fuzz=FuzzDirectoryStates
// explores (bound it with -fuzztime).
func FuzzDirectoryStates(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})                         // a full copy left as .log.swap beside segment 2
	f.Add([]byte{1, 1, 2, 0, 1, 3, 1, 1, 4, 2})       // clean: empty and garbage swaps
	f.Add([]byte{0, 2, 9, 1, 2, 0, 3})                // strays inside and past the end, unclean
	f.Add([]byte{1, 2, 0, 0, 2, 0, 4})                // clean: zero-filled and empty strays past the end
	f.Add([]byte{0, 0, 3, 8, 0, 5, 0})                // middle segment renamed .log.deleted, unclean
	f.Add([]byte{1, 0, 3, 8, 5, 6, 0})                // clean: renamed .deleted, one emptied
	f.Add([]byte{0, 6, 4, 0, 5, 2, 0, 3, 1, 1})       // deleted and emptied segments, a missing index
	f.Add([]byte{1, 6, 4, 0, 4, 1, 7})                // clean: a deleted .log, a garbage index
	f.Add([]byte{0, 0, 2, 2, 1, 5, 3, 7, 1, 1})       // .log.cleaned voids a swap above it; garbage marker
	f.Add([]byte{1, 7, 0, 0, 1, 0, 3, 0, 9, 6, 1, 9}) // clean: garbage marker with a swap, last segment renamed away
	f.Add([]byte{0, 0, 9, 3, 0, 9, 0, 5, 9, 0})       // the last segment renamed .swap, .cleaned; emptied
	// The log every input damages a copy of.
	tmpl := filepath.Join(f.TempDir(), "template")
	tmplWant, tmplBases, tmplState := buildLog(f, tmpl, 40)
	if len(tmplBases) < 5 {
		f.Fatalf("the template has %d segments", len(tmplBases))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		dir := filepath.Join(t.TempDir(), "log")
		copyDir(t, tmpl, dir)
		clean := in[0]&1 == 1
		ops := in[1:]
		if len(ops) > 3*8 {
			ops = ops[:3*8]
		}
		bases, want := tmplBases, tmplWant
		origEnd := int64(len(want))
		segEnd := func(i int) int64 {
			if i+1 < len(bases) {
				return bases[i+1]
			}
			return origEnd
		}
		damaged := map[int]bool{}
		var did []string
		write := func(name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		exists := func(name string) bool {
			_, err := os.Stat(filepath.Join(dir, name))
			return err == nil
		}
		logOf := func(i int) []byte {
			data, err := os.ReadFile(segment.LogPath(tmpl, bases[i]))
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		content := func(kind byte, i int) []byte {
			switch kind % 4 {
			case 0:
				return nil
			case 1:
				return make([]byte, 4096)
			case 2:
				return bytes.Repeat([]byte("garbage!"), 64)
			default:
				seg := logOf(i)
				return seg[:len(seg)/2]
			}
		}
		for len(ops) >= 3 {
			kind, i, p := ops[0]%8, int(ops[1])%len(bases), ops[2]
			ops = ops[3:]
			base := bases[i]
			switch kind {
			case 0: // rename one of the segment's files to a transient suffix
				suf := []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix}[p%3]
				to := []string{swapSuffix, cleanedSuffix, segment.DeletedSuffix}[(p/3)%3]
				name := segment.FileName(base, suf)
				if !exists(name) {
					continue
				}
				if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+to)); err != nil {
					t.Fatal(err)
				}
				if suf == segment.LogSuffix {
					damaged[i] = true
				}
				did = append(did, "rename "+name+" to "+to)
			case 1: // a leftover .log.swap beside the intact segment
				name := segment.FileName(base, segment.LogSuffix+swapSuffix)
				data := logOf(i)
				if p%5 < 4 {
					data = content(p, i)
				}
				write(name, data)
				did = append(did, fmt.Sprintf("swap %s (%d bytes)", name, len(data)))
			case 2: // a stray segment file
				sb := origEnd + int64(p)
				if p%2 == 1 && !clean && base+1 < segEnd(i) {
					sb = base + 1
				}
				name := segment.FileName(sb, segment.LogSuffix)
				if exists(name) {
					continue
				}
				data := content(p/2, i)
				if p/2%4 == 3 {
					data = make([]byte, 100) // not a copy: its batches would not start at its base
				}
				write(name, data)
				did = append(did, fmt.Sprintf("stray %s (%d bytes)", name, len(data)))
			case 3: // a missing index file
				name := segment.FileName(base, []string{segment.IndexSuffix, segment.TimeIndexSuffix}[p%2])
				if err := os.Remove(filepath.Join(dir, name)); err == nil {
					did = append(did, "remove "+name)
				}
			case 4: // a garbage index file
				name := segment.FileName(base, []string{segment.IndexSuffix, segment.TimeIndexSuffix}[p%2])
				write(name, bytes.Repeat([]byte{p, 0xff, 3, 0}, 1+int(p%7)))
				did = append(did, "garbage "+name)
			case 5: // the segment emptied
				name := segment.FileName(base, segment.LogSuffix)
				if !exists(name) {
					continue
				}
				if err := os.Truncate(filepath.Join(dir, name), 0); err != nil {
					t.Fatal(err)
				}
				damaged[i] = true
				did = append(did, "empty "+name)
			case 6: // the segment's .log deleted
				name := segment.FileName(base, segment.LogSuffix)
				if err := os.Remove(filepath.Join(dir, name)); err == nil {
					damaged[i] = true
					did = append(did, "remove "+name)
				}
			case 7: // a garbage swap-commit marker or .cleaned file
				name := SwapCommitFile
				if p%2 == 1 {
					name = segment.FileName(base, segment.LogSuffix+cleanedSuffix)
				}
				write(name, content(p/2, i))
				did = append(did, "garbage "+name)
			}
		}
		st := tmplState
		st.Clean = clean
		if !clean {
			st.RecoveryPoint = 0
		}
		desc := fmt.Sprintf("clean=%v: %s", clean, strings.Join(did, "; "))
		l, err := Open(nil, dir, &Options{SegmentBytes: 1024, FlushPolicy: FlushNone}, st)
		if err != nil {
			t.Fatalf("%s: open: %v", desc, err)
		}
		defer l.Close()
		got := map[int64]rec{}
		recs, _ := readPassing(t, l, l.LogStartOffset())
		for _, r := range recs {
			got[r.offset] = r
		}
		lastIntactEnd := int64(0)
		for i := range bases {
			if damaged[i] {
				continue
			}
			lastIntactEnd = segEnd(i)
			for _, w := range want[bases[i]:segEnd(i)] {
				if g, ok := got[w.offset]; !ok || g != w {
					t.Fatalf("%s: record %d of intact segment %d reads %+v (found %v), want %+v; recovery %+v", desc, w.offset, bases[i], g, ok, w, l.Recovery())
				}
			}
		}
		end := l.LogEndOffset()
		if end < lastIntactEnd || end > origEnd {
			t.Fatalf("%s: log end %d, want between %d (the last intact segment's end) and %d; recovery %+v", desc, end, lastIntactEnd, origEnd, l.Recovery())
		}
		if first, _, err := l.Append(makeBatch(t, "n", 0, 1, 10, 1)); err != nil || first != end {
			t.Fatalf("%s: append: %d %v, want offset %d", desc, first, err, end)
		}
	})
}
