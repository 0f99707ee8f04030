package transport

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Regression tests for incompatibilities found by driving Kafka's clients
// in other languages (kafkatest's kcat, kafka-python and kafkajs tests).

// librdkafka (kcat) sent gzip, snappy and lz4 batches uncompressed while
// ApiVersions listed Produce from v3 ("Broker does not support compression
// type gzip: not compressing batch"): it looks for Produce v0. Produce is
// listed from v0, as Kafka 4 does (KAFKA-18659), and a request below v3
// still closes its connection.
func TestProduceAdvertisedFromV0ServedFromV3(t *testing.T) {
	ts := startServer(t, nil, nil)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	if _, err := nc.Write(kmsgFrame(av, 1)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(readResponse(t, nc, 1, false)); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.Produce.Int16() {
			found = true
			if k.MinVersion != 0 || k.MaxVersion != 13 {
				t.Fatalf("Produce advertised %d..%d, want 0..13", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !found {
		t.Fatal("Produce not advertised")
	}
	for _, v := range []int16{0, 2} {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = v, 1, 1000
		if _, err := c.Write(kmsgFrame(p, 2)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, "Produce v"+string(rune('0'+v)))
		c.Close()
	}
	if a, ok := lookupAPI(kmsg.Produce.Int16(), 3); !ok || a.min != 3 {
		t.Fatal("Produce v3 not served")
	}
}
