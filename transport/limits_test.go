package transport

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMaxConnsClosesTheExtraOne(t *testing.T) {
	ts := startServer(t, nil, &Options{MaxConns: 2})
	var conns []net.Conn
	for i := range 2 {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// A round trip proves the server took the connection.
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 2
		if _, err := nc.Write(kmsgFrame(av, int32(i))); err != nil {
			t.Fatal(err)
		}
		readResponse(t, nc, int32(i), false)
		conns = append(conns, nc)
	}
	extra, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	expectClosed(t, extra, "the connection past MaxConns")
	// The first two still work.
	for i, nc := range conns {
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		if _, err := nc.Write(kmsgFrame(av, int32(10+i))); err != nil {
			t.Fatal(err)
		}
		readResponse(t, nc, int32(10+i), false)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	ts := startServer(t, nil, &Options{IdleTimeout: 200 * time.Millisecond})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("an idle connection was not closed: %v", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", took)
	}
}
