package kafkatest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/foliolog/folio/transport"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Logins with each mechanism from kcat (librdkafka), kafka-python and
// kafkajs. The first two found incompatibilities: both need SaslHandshake v0 (listed
// by librdkafka's check, used with bare tokens by kafka-python), and
// librdkafka's SCRAM final message repeats its nonce. Each writes one
// record per mechanism; wrong passwords write nothing.

var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// saslCluster serves SASL for alice/s3cret, with a topic "s".
func saslCluster(t *testing.T) (*Cluster, *serverLog) {
	t.Helper()
	var creds []transport.Credential
	for _, m := range []string{transport.MechanismSCRAMSHA256, transport.MechanismSCRAMSHA512} {
		cr, err := transport.NewCredential("alice", "s3cret", m)
		if err != nil {
			t.Fatal(err)
		}
		creds = append(creds, cr)
	}
	return newLogged(t, &Options{Topics: []string{"s"}, Server: transport.Options{SASL: &transport.SASL{Credentials: creds}}})
}

// values returns the values of topic "s", in offset order.
func values(t *testing.T, c *Cluster) []string {
	t.Helper()
	var out []string
	for _, r := range readAll(t, c.Broker, "s") {
		out = append(out, string(r.Value))
	}
	return out
}

// expectRefused fails unless the command fails and the server logged a
// failed login (which it then drops from the problems to report).
func expectRefused(t *testing.T, sl *serverLog, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err == nil {
		t.Fatalf("a wrong password was accepted:\n%s", out)
	}
	if !sl.dropFailedLogins() {
		t.Fatal("the client failed, but the server logged no failed login")
	}
}

// dropFailedLogins removes the failed logins from the problems to report
// and says whether there was one.
func (l *serverLog) dropFailedLogins() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.problems)
	l.problems = slices.DeleteFunc(l.problems, func(p string) bool { return strings.HasPrefix(p, "transport: SASL authentication failed") })
	return len(l.problems) < n
}

func TestKcatSASL(t *testing.T) {
	kcat := needTool(t, "kcat", kcatInstall)
	c, sl := saslCluster(t)
	auth := func(mech, password string) []string {
		return []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech, "-X", "sasl.username=alice", "-X", "sasl.password=" + password}
	}
	for _, mech := range saslMechanisms {
		runTool(t, []byte("kcat "+mech+"\n"), nil, kcat, append([]string{"-b", c.Addr(), "-P", "-t", "s"}, auth(mech, "s3cret")...)...)
		expectRefused(t, sl, kcat, append([]string{"-b", c.Addr(), "-L", "-m", "2"}, auth(mech, "wrong")...)...)
	}
	want := []string{"kcat PLAIN", "kcat SCRAM-SHA-256", "kcat SCRAM-SHA-512"}
	if got := values(t, c); !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	if !sl.used(kmsg.SASLAuthenticate) {
		t.Error("librdkafka never sent SaslAuthenticate")
	}
}

func TestKafkaPythonSASL(t *testing.T) {
	py := pythonWithKafka(t)
	c, sl := saslCluster(t)
	const script = `
import sys
from kafka import KafkaProducer
from kafka.errors import KafkaError
boot, mech, password = sys.argv[1:4]
p = KafkaProducer(bootstrap_servers=boot, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech,
                  sasl_plain_username="alice", sasl_plain_password=password, request_timeout_ms=5000, max_block_ms=5000)
p.send("s", ("kafka-python " + mech).encode()).get(timeout=20)
p.close()
`
	for _, mech := range saslMechanisms {
		runTool(t, nil, nil, py, "-c", script, c.Addr(), mech, "s3cret")
		expectRefused(t, sl, py, "-c", script, c.Addr(), mech, "wrong")
	}
	want := []string{"kafka-python PLAIN", "kafka-python SCRAM-SHA-256", "kafka-python SCRAM-SHA-512"}
	if got := values(t, c); !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	if !sl.used(kmsg.SASLHandshake) {
		t.Error("kafka-python never sent SaslHandshake")
	}
}

func TestKafkajsSASL(t *testing.T) {
	js := kafkajs(t)
	c, sl := saslCluster(t)
	type saslIn struct {
		Mechanism string `json:"mechanism"`
		Password  string `json:"password"`
		Topic     string `json:"topic"`
		Value     string `json:"value"`
	}
	var want []string
	for _, mech := range saslMechanisms {
		var res struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		js("sasl", c.Addr(), saslIn{mech, "s3cret", "s", "kafkajs " + mech}, &res)
		if !res.OK {
			t.Fatalf("%s: %s", mech, res.Error)
		}
		want = append(want, "kafkajs "+mech)
		js("sasl", c.Addr(), saslIn{mech, "wrong", "s", "not written"}, &res)
		if res.OK {
			t.Fatalf("%s: a wrong password was accepted", mech)
		}
		if !sl.dropFailedLogins() {
			t.Fatalf("%s: kafkajs failed (%s), but the server logged no failed login", mech, res.Error)
		}
	}
	if got := values(t, c); !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
}
