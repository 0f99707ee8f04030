package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio/transport"
)

// tlsCluster serves TLS with a certificate for 127.0.0.1 and localhost
// signed by a CA of the test's own, whose PEM file it returns.
func tlsCluster(t *testing.T) (*Cluster, string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := newKey(), newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "folio kafkatest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	c, _ := newLogged(t, &Options{Topics: []string{"s"}, Server: transport.Options{TLS: cfg}})
	return c, caFile
}

// TestClientsOverTLS: kcat, kafka-python and kafkajs produce and consume
// over TLS, verifying the server's certificate, byte for byte (record
// bytes take the copying read path under TLS).
func TestClientsOverTLS(t *testing.T) {
	t.Run("kcat", func(t *testing.T) {
		kcat := needTool(t, "kcat", kcatInstall)
		c, ca := tlsCluster(t)
		tlsArgs := []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca}
		runTool(t, []byte("one\ntwo\n"), nil, kcat, append([]string{"-b", c.Addr(), "-P", "-t", "s"}, tlsArgs...)...)
		out := runTool(t, nil, nil, kcat, append([]string{"-b", c.Addr(), "-C", "-t", "s", "-o", "beginning", "-e", "-q", "-f", kcatFormat}, tlsArgs...)...)
		sameRecords(t, parseKcat(t, "s", out), readAll(t, c.Broker, "s"))
		if got := values(t, c); !slices.Equal(got, []string{"one", "two"}) {
			t.Fatalf("values %q", got)
		}
	})
	t.Run("kafka-python", func(t *testing.T) {
		py := pythonWithKafka(t)
		c, ca := tlsCluster(t)
		const script = `
import sys
from kafka import KafkaConsumer, KafkaProducer
boot, ca = sys.argv[1:3]
tls = dict(security_protocol="SSL", ssl_cafile=ca)
p = KafkaProducer(bootstrap_servers=boot, acks="all", **tls)
p.send("s", b"over tls").get(timeout=20)
p.close()
c = KafkaConsumer("s", bootstrap_servers=boot, auto_offset_reset="earliest", consumer_timeout_ms=20000, **tls)
for m in c:
    sys.stdout.write(m.value.decode())
    break
c.close()
`
		if out := runTool(t, nil, nil, py, "-c", script, c.Addr(), ca); string(out) != "over tls" {
			t.Fatalf("kafka-python read %q", out)
		}
		if got := values(t, c); !slices.Equal(got, []string{"over tls"}) {
			t.Fatalf("values %q", got)
		}
	})
	t.Run("kafkajs", func(t *testing.T) {
		js := kafkajs(t)
		c, ca := tlsCluster(t)
		var got []string
		js("tls", c.Addr(), map[string]any{"ca": ca, "topic": "s", "value": "kafkajs over tls", "n": 1}, &got)
		if !slices.Equal(got, []string{"kafkajs over tls"}) || !slices.Equal(values(t, c), got) {
			t.Fatalf("kafkajs read %q, the log holds %q", got, values(t, c))
		}
	})
}
