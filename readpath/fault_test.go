package readpath

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sink keeps the compiler from discarding reads whose result is unused.
var sink uint64

// touch reads every byte of b.
func touch(b []byte) {
	var s uint64
	for _, c := range b {
		s += uint64(c)
	}
	sink += s
}

// TestGuardFaultOnTruncatedMapping truncates a mapped file behind the
// package's back (the SIGBUS case): touching the lost pages inside Guard is
// an ErrFault naming the file and offset, and WriteTo refuses with
// ErrTruncated instead of sending.
func TestGuardFaultOnTruncatedMapping(t *testing.T) {
	rng := testRand(t)
	const size, cut = 256 << 10, 128 << 10
	path, _ := writeTestFile(t, rng, size)
	src := openSource(t, Mmap, path, 0)
	v, err := src.View(0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	b, err := v.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := Guard(func() error { touch(b); return nil }); err != nil {
		t.Fatalf("Guard before truncation: %v", err)
	}
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	if err := Guard(func() error { touch(b[:cut]); return nil }); err != nil {
		t.Fatalf("pages below the cut must still read: %v", err)
	}
	err = Guard(func() error { touch(b); return nil })
	if !errors.Is(err, ErrFault) {
		t.Fatalf("Guard over truncated pages = %v, want ErrFault", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) {
		t.Errorf("fault error %q does not name the file", msg)
	}
	i := strings.Index(msg, " offset ")
	if i < 0 {
		t.Fatalf("fault error %q has no offset", msg)
	}
	off, perr := strconv.ParseInt(strings.Fields(msg[i+len(" offset "):])[0], 10, 64)
	if perr != nil || off < cut || off >= size {
		t.Errorf("fault offset %d (%v), want in [%d, %d)", off, perr, cut, size)
	}

	var buf bytes.Buffer
	if n, err := v.WriteTo(&buf); !errors.Is(err, ErrTruncated) || n != 0 || buf.Len() != 0 {
		t.Errorf("WriteTo after truncation = %d, %v (wrote %d), want 0, ErrTruncated", n, err, buf.Len())
	}
}

// TestWriteToTruncatedDuringSend reaches the checks inside the send: the
// file's Stat still reports the old size (the truncation raced the size
// check), so WriteTo must catch the cut while sending, for every path.
func TestWriteToTruncatedDuringSend(t *testing.T) {
	rng := testRand(t)
	const size, cut = 256 << 10, 128 << 10
	const pos = 1000
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			path, data := writeTestFile(t, rng, size)
			src, err := Open(kind, staleStatFile{OSFile(openOS(t, path)), size}, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			wantErr := ErrTruncated
			if kind == Mmap {
				wantErr = ErrFault
			}

			v, err := src.View(pos, size-pos)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			n, err := v.WriteTo(&buf)
			if !errors.Is(err, wantErr) {
				t.Errorf("WriteTo(buffer) = %d, %v; want %v", n, err, wantErr)
			}
			// A fault inside bytes.Buffer.Write leaves its contents undefined,
			// so only the count WriteTo reports is checked against the file.
			if n < 0 || n > int64(buf.Len()) || !bytes.Equal(buf.Bytes()[:n], data[pos:pos+int(n)]) {
				t.Errorf("WriteTo(buffer) reported %d bytes that are not the file's", n)
			}

			client, server := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(server)
				got <- b
			}()
			n, err = v.WriteTo(client)
			client.Close()
			recv := <-got
			if !errors.Is(err, wantErr) {
				t.Errorf("WriteTo(TCP) = %d, %v; want %v", n, err, wantErr)
			}
			if int64(len(recv)) != n || !bytes.Equal(recv, data[pos:pos+len(recv)]) {
				t.Errorf("WriteTo(TCP) reported %d bytes, peer got %d, equal prefix %v", n, len(recv), bytes.Equal(recv, data[pos:pos+len(recv)]))
			}
			if kind == Sendfile && n != cut-pos {
				t.Errorf("sendfile stopped after %d bytes, want the %d before the cut", n, cut-pos)
			}
			v.Release()

			// The honest Stat path: a fresh Source sees the short file.
			src2 := openSource(t, kind, path, size)
			v2, err := src2.View(pos, size-pos)
			if err != nil {
				t.Fatal(err)
			}
			defer v2.Release()
			if n, err := v2.WriteTo(client); !errors.Is(err, ErrTruncated) || n != 0 {
				t.Errorf("WriteTo with a current size = %d, %v; want 0, ErrTruncated", n, err)
			}
			if kind == Sendfile {
				if _, err := v2.Bytes(); !errors.Is(err, ErrTruncated) {
					t.Errorf("Bytes past the cut = %v, want ErrTruncated", err)
				}
			}
		})
	}
}

func TestGuard(t *testing.T) {
	sentinel := errors.New("fn failed")
	if err := Guard(func() error { return sentinel }); err != sentinel {
		t.Errorf("Guard returned %v, want fn's error unchanged", err)
	}
	if err := Guard(func() error { return nil }); err != nil {
		t.Errorf("Guard returned %v, want nil", err)
	}

	for _, prev := range []bool{false, true} {
		debug.SetPanicOnFault(prev)
		_ = Guard(func() error {
			if !debug.SetPanicOnFault(true) {
				t.Error("SetPanicOnFault is off inside Guard")
			}
			return nil
		})
		if got := debug.SetPanicOnFault(false); got != prev {
			t.Errorf("Guard left SetPanicOnFault %v, want the previous %v", got, prev)
		}
	}

	// Panics that are not memory faults are bugs: they must propagate.
	checkPanics := func(name string, fn func() error) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: panic was swallowed", name)
			}
		}()
		_ = Guard(fn)
	}
	checkPanics("plain panic", func() error { panic("boom") })
	checkPanics("nil dereference", func() error {
		var p *[4096]byte
		return errors.New(string(p[100:101]))
	})
}

// TestGuardForeignMapping faults on a mapping this package did not make: the
// error still wraps ErrFault, with the address but without a file name.
func TestGuardForeignMapping(t *testing.T) {
	rng := testRand(t)
	path, _ := writeTestFile(t, rng, 64<<10)
	f := openOS(t, path)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 64<<10, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = Guard(func() error { touch(m); return nil })
	if !errors.Is(err, ErrFault) {
		t.Fatalf("Guard = %v, want ErrFault", err)
	}
	if strings.Contains(err.Error(), path) {
		t.Errorf("fault on a foreign mapping named a file: %v", err)
	}
}
