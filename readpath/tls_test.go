package readpath

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
)

// selfSignedTLS returns a server and a client config that trusts the
// server's freshly generated certificate for 127.0.0.1.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "folio readpath test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return server, client
}

// TestTLSFallback sends views over TLS: the bytes must arrive intact through
// the copying path, and sendfile (which would bypass encryption) must not run.
func TestTLSFallback(t *testing.T) {
	rng := testRand(t)
	const size = 2<<20 + 77
	path, data := writeTestFile(t, rng, size)
	serverCfg, clientCfg := selfSignedTLS(t)

	rawClient, rawServer := tcpPair(t)
	server := tls.Server(rawServer, serverCfg)
	client := tls.Client(rawClient, clientCfg)
	hs := make(chan error, 1)
	go func() { hs <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-hs; err != nil {
		t.Fatal(err)
	}

	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			src := openSource(t, kind, path, 0)
			base := ReadCounters()
			var total int64
			for i := 0; i < 25; i++ {
				pos, n := randRange(rng, size, 1200<<10)
				v, err := src.View(pos, n)
				if err != nil {
					t.Fatal(err)
				}
				sendOver(t, v, client, server, data[pos:pos+int64(n)])
				v.Release()
				total += int64(n)
			}
			if d := counterDelta(base); d.SendfileBytes != 0 || d.CopiedBytes != total {
				t.Errorf("over TLS: sendfile %d bytes, copied %d; want 0 and %d", d.SendfileBytes, d.CopiedBytes, total)
			}
		})
	}
}
