package transport

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
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

// saslTestServer serves SASL for alice/s3cret (SCRAM-SHA-256 and -512,
// and PLAIN).
func saslTestServer(t *testing.T) *testServer {
	t.Helper()
	var creds []Credential
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		c, err := NewCredential("alice", "s3cret", m)
		if err != nil {
			t.Fatal(err)
		}
		creds = append(creds, c)
	}
	ts := startServer(t, nil, &Options{SASL: &SASL{Credentials: creds}})
	ts.b.mustCreate(t, "s", topic.Config{Partitions: 1})
	return ts
}

// writeRaw and readRaw are the bare token frames after a SaslHandshake v0.
func writeRaw(t *testing.T, nc net.Conn, b []byte) {
	t.Helper()
	if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b)))); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readRaw(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(nc, l[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// handshakeV0 dials and sends a SaslHandshake v0 for mech.
func handshakeV0(t *testing.T, ts *testServer, mech string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, mech
	if _, err := nc.Write(kmsgFrame(hs, 1)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 0
	if err := resp.ReadFrom(readResponse(t, nc, 1, false)); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake v0 %s: error %d, %v", mech, resp.ErrorCode, err)
	}
	return nc
}

// metadataWorks fails unless a Metadata request is answered on nc.
func metadataWorks(t *testing.T, nc net.Conn) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if _, err := nc.Write(kmsgFrame(md, 9)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 1
	if err := resp.ReadFrom(readResponse(t, nc, 9, false)); err != nil || len(resp.Brokers) != 1 {
		t.Fatalf("Metadata after a v0 login: %+v, %v", resp.Brokers, err)
	}
}

// kafka-python 2.0 logs in with SaslHandshake v0 and bare tokens (no
// SaslAuthenticate), and librdkafka before the fix of its issue 4983
// refuses any SASL login unless SaslHandshake v0 is listed: the server
// closed the connection on v0 ("SASLHandshake version 0 not served").
func TestSASLHandshakeV0BareTokens(t *testing.T) {
	ts := saslTestServer(t)
	t.Run("PLAIN", func(t *testing.T) {
		nc := handshakeV0(t, ts, MechanismPlain)
		defer nc.Close()
		writeRaw(t, nc, []byte("\x00alice\x00s3cret"))
		if b := readRaw(t, nc); len(b) != 0 {
			t.Fatalf("PLAIN answer %q, want an empty token", b)
		}
		metadataWorks(t, nc)
	})
	for _, mech := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		t.Run(mech, func(t *testing.T) {
			nc := handshakeV0(t, ts, mech)
			defer nc.Close()
			h, _ := hashFor(mech)
			cl, err := h.NewClient("alice", "s3cret", "")
			if err != nil {
				t.Fatal(err)
			}
			conv := cl.NewConversation()
			first, _ := conv.Step("")
			writeRaw(t, nc, []byte(first))
			final, err := conv.Step(string(readRaw(t, nc)))
			if err != nil {
				t.Fatal(err)
			}
			writeRaw(t, nc, []byte(final))
			if _, err := conv.Step(string(readRaw(t, nc))); err != nil || !conv.Valid() {
				t.Fatalf("server-final: %v (valid %v)", err, conv.Valid())
			}
			metadataWorks(t, nc)
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		nc := handshakeV0(t, ts, MechanismPlain)
		defer nc.Close()
		writeRaw(t, nc, []byte("\x00alice\x00wrong"))
		expectClosed(t, nc, "a failed v0 login")
	})
	t.Run("listed", func(t *testing.T) {
		if a, ok := lookupAPI(kmsg.SASLHandshake.Int16(), 0); !ok || a.advMin != 0 {
			t.Fatal("SaslHandshake v0 not served")
		}
	})
}

// librdkafkaFinal builds a SCRAM client-final-message the way librdkafka
// 2.0.2 does, with prefix (its client nonce) before the combined nonce,
// and returns it with the server signature to expect.
func librdkafkaFinal(t *testing.T, mech, password, bare, serverFirst, prefix string) (final, wantServerFinal string) {
	t.Helper()
	h, _ := hashFor(mech)
	combined, _ := scramAttr(serverFirst, 'r')
	saltB64, _ := scramAttr(serverFirst, 's')
	iterStr, _ := scramAttr(serverFirst, 'i')
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		t.Fatal(err)
	}
	iters, err := strconv.Atoi(iterStr)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(h, password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	hm := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := hm(salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	withoutProof := "c=biws,r=" + prefix + combined
	auth := bare + "," + serverFirst + "," + withoutProof
	sig := hm(sum.Sum(nil), auth)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(hm(hm(salted, "Server Key"), auth))
}

// librdkafka's SCRAM final message carries its client nonce followed by
// the combined nonce; xdg-go/scram's server refused it ("nonce received
// did not match nonce sent"), so kcat could not log in with SCRAM. That
// form is accepted, with its proof checked; any other nonce is not.
func TestSCRAMLibrdkafkaDoubledNonce(t *testing.T) {
	ts := saslTestServer(t)
	const cnonce = "rdk-client-nonce=with~chars"
	login := func(t *testing.T, mech, password, prefix string) (net.Conn, string) {
		nc := handshakeV0(t, ts, mech)
		bare := "n=alice,r=" + cnonce
		writeRaw(t, nc, []byte("n,,"+bare))
		serverFirst := string(readRaw(t, nc))
		final, want := librdkafkaFinal(t, mech, password, bare, serverFirst, prefix)
		writeRaw(t, nc, []byte(final))
		return nc, want
	}
	for _, mech := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		t.Run(mech, func(t *testing.T) {
			nc, want := login(t, mech, "s3cret", cnonce)
			defer nc.Close()
			if got := string(readRaw(t, nc)); got != want {
				t.Fatalf("server-final %q, want %q", got, want)
			}
			metadataWorks(t, nc)
		})
	}
	for name, c := range map[string]struct{ password, prefix string }{
		"wrong password":      {"wrong", cnonce},
		"another prefix":      {"s3cret", "x" + cnonce[1:]},
		"nonce repeated more": {"s3cret", cnonce + cnonce},
	} {
		t.Run(name, func(t *testing.T) {
			nc, _ := login(t, MechanismSCRAMSHA256, c.password, c.prefix)
			defer nc.Close()
			expectClosed(t, nc, name)
		})
	}
}
