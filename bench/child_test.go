package main

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestReaderChild runs the real child process (this test binary
// re-executed) and checks it receives exactly what is sent, on several
// connections at once, and reports its own getrusage.
func TestReaderChild(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	child, err := startReaderChild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := child.close(); err != nil {
			t.Error(err)
		}
	}()
	for round, n := range []int{1, 3} {
		payloads := make([][]byte, n)
		for i := range payloads {
			payloads[i] = make([]byte, 1<<20+rng.IntN(1<<20))
			fillRandom(rng, payloads[i])
		}
		conns, err := child.open(n, 64<<10, true)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, errs[i] = c.Write(payloads[i]); errs[i] == nil {
					errs[i] = c.CloseWrite()
				}
			}()
		}
		wg.Wait()
		rep, err := child.wait()
		for _, c := range conns {
			c.Close()
		}
		if err := errors.Join(append(errs, err)...); err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			if rep.Bytes[i] != int64(len(p)) || rep.CRC[i] != crc32.Checksum(p, castagnoli) {
				t.Fatalf("round %d connection %d: child got %d bytes crc %08x, sent %d crc %08x",
					round, i, rep.Bytes[i], rep.CRC[i], len(p), crc32.Checksum(p, castagnoli))
			}
		}
		if rep.Usage.cpu() <= 0 {
			t.Errorf("round %d: child reported no CPU time for reading %d connections: %+v", round, n, rep.Usage)
		}
	}
}

func TestChildRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"10.1.2.3:9", "localhost:9", "[::1]:9", "nonsense"} {
		if err := serveChild(addr); !errors.Is(err, ErrChild) {
			t.Errorf("serveChild(%q) = %v, want ErrChild", addr, err)
		}
	}
}

func TestChildRejectsBadCommand(t *testing.T) {
	var bufs [][]byte
	rep := drain("127.0.0.1:1", childCmd{Op: "read", Conns: 0, Buf: 10}, &bufs)
	if rep.Err == "" {
		t.Error("a read of zero connections was accepted")
	}
	rep = drain("127.0.0.1:1", childCmd{Op: "read", Conns: 1, Buf: 0}, &bufs)
	if rep.Err == "" {
		t.Error("a zero-byte buffer was accepted")
	}
	rep = drain("127.0.0.1:1", childCmd{Op: "read", Conns: -5, Buf: 10}, &bufs)
	if rep.Err == "" {
		t.Error("a negative connection count was accepted")
	}
	for _, bad := range []string{
		`{"op":"read","conns":0,"buf":10}`,
		`{"op":"read","conns":-1,"buf":10}`,
		`{"op":"read","conns":1,"buf":0}`,
		`{"op":"read","conns":100000,"buf":10}`,
		`{"op":"read","conns":1,"buf":1000000000}`,
		`{"op":"explode"}`,
		`not json`,
	} {
		if _, err := decodeCommand([]byte(bad)); !errors.Is(err, ErrChild) {
			t.Errorf("decodeCommand(%s) = %v, want ErrChild", bad, err)
		}
	}
	if cmd, err := decodeCommand([]byte(`{"op":"read","conns":2,"buf":65536,"verify":true}`)); err != nil || cmd.Conns != 2 || !cmd.Verify {
		t.Errorf("a good command: %+v, %v", cmd, err)
	}
}

// FuzzDecodeCommand: whatever arrives on the control connection, decoding
// never panics, and an accepted command is within bounds and survives a
// round trip through the encoder the parent uses.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		`{"op":"quit"}`,
		`{"op":"read","conns":1,"buf":262144}`,
		`{"op":"read","conns":4,"buf":262144,"verify":true}`,
		`{"op":"read","conns":-1,"buf":1}`,
		`{"op":"read","conns":1e300}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		cmd, err := decodeCommand(line)
		if err != nil {
			if !errors.Is(err, ErrChild) {
				t.Fatalf("error outside ErrChild: %v", err)
			}
			return
		}
		if cmd.Op == "read" && (cmd.Conns < 1 || cmd.Conns > maxChildConns || cmd.Buf < 1 || cmd.Buf > maxChildBuf) {
			t.Fatalf("accepted out-of-bounds command %+v", cmd)
		}
		b, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeCommand(b)
		if err != nil || back != cmd {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", cmd, b, back, err)
		}
	})
}
