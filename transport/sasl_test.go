package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestSASLPlainAndSCRAM(t *testing.T) {
	var creds []Credential
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		c, err := NewCredential("alice", "s3cret", m)
		if err != nil {
			t.Fatal(err)
		}
		creds = append(creds, c)
	}
	// The credentials file holds salted keys, never the password.
	path := filepath.Join(t.TempDir(), "users.json")
	var file []byte
	for _, c := range creds {
		line, _ := json.Marshal(c)
		file = append(append(file, line...), '\n')
	}
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(file, []byte("s3cret")) {
		t.Fatal("the password is in the credentials file")
	}
	loaded, err := LoadCredentials(path)
	if err != nil || len(loaded) != 2 {
		t.Fatalf("LoadCredentials: %v, %v", loaded, err)
	}
	ts := startServer(t, nil, &Options{SASL: &SASL{Credentials: loaded}})
	ts.b.mustCreate(t, "s", topic.Config{Partitions: 1})
	ctx := testCtx(t)
	mechs := map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism()),
		"SCRAM-SHA-512": kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism()),
	}
	for name, opt := range mechs {
		cl := newClient(t, ts.addr, opt, kgo.DefaultProduceTopic("s"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(name)}).FirstErr(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Wrong passwords fail, for every mechanism.
	for name, opt := range map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()),
		"unknown user":  kgo.SASL(scram.Auth{User: "bob", Pass: "s3cret"}.AsSha512Mechanism()),
	} {
		cl := newClient(t, ts.addr, opt, kgo.DefaultProduceTopic("s"), kgo.RequestRetries(0))
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := cl.Ping(short)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s with a wrong password: %v", name, err)
		}
	}
	// Before authenticating, only ApiVersions and the SASL requests: a
	// Metadata closes the connection.
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	if _, err := nc.Write(kmsgFrame(av, 1)); err != nil {
		t.Fatal(err)
	}
	readResponse(t, nc, 1, false)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if _, err := nc.Write(kmsgFrame(md, 2)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc, "Metadata before SASL")
	p, _ := ts.b.Partition("s", 0)
	if p.HighWatermark() != 3 {
		t.Fatalf("high watermark %d: the refused clients wrote or the good ones did not", p.HighWatermark())
	}
}
