package transport

import (
	"context"
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

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testCA makes a CA and certificates it signs, for TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "folio test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLSProduceFetchAndClientCertificates(t *testing.T) {
	ca := newTestCA(t)
	srvCert := ca.issue(t, "server", x509.ExtKeyUsageServerAuth)
	ts := startServer(t, nil, &Options{TLS: &tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool,
	}})
	var cfg topic.Config
	if err := cfg.Set("read.path", "sendfile"); err != nil {
		t.Fatal(err)
	}
	cfg.Partitions = 1
	ts.b.mustCreate(t, "secure", cfg)
	ctx := testCtx(t)
	cliCert := ca.issue(t, "client", x509.ExtKeyUsageClientAuth)
	good := &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cliCert}}
	cl := newClient(t, ts.addr, kgo.DialTLSConfig(good), kgo.DefaultProduceTopic("secure"))
	for range 50 {
		cl.Produce(ctx, &kgo.Record{Value: make([]byte, 10000)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The sendfile read path copies under TLS; the records arrive whole.
	recs := consumeN(t, ctx, ts.addr, 50, kgo.DialTLSConfig(good), kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for _, r := range recs {
		if len(r.Value) != 10000 {
			t.Fatalf("a %d-byte value, want 10000", len(r.Value))
		}
	}
	// Without a client certificate the handshake fails.
	bad, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool}), kgo.DefaultProduceTopic("secure"),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := bad.Ping(short); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}
