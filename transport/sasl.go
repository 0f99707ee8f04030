package transport

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/xdg-go/scram"
)

// SASL mechanisms served.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// DefaultSCRAMIterations is the PBKDF2 iteration count NewCredential uses
// (Kafka's kafka-configs default is 4096; more is slower to brute-force).
const DefaultSCRAMIterations = 8192

// ErrBadCredentials is the class of a credentials file or entry that
// cannot be used.
var ErrBadCredentials = errors.New("transport: bad SASL credentials")

// Credential is one user's SCRAM credential for one mechanism, as it is
// stored: the salt, the iteration count and the keys RFC 5802 derives from
// the password, never the password itself. The same entry verifies PLAIN
// logins (the password given is salted and hashed the same way and the
// stored key compared).
type Credential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// SASL configures authentication: with it, a connection may send only
// ApiVersions, SaslHandshake and SaslAuthenticate until it has
// authenticated; anything else closes it, as does a failed login.
type SASL struct {
	// Credentials are the users. PLAIN checks a user's SCRAM-SHA-256
	// entry (or its SCRAM-SHA-512 one).
	Credentials []Credential
	// DisablePlain refuses PLAIN (say, without TLS, where PLAIN sends the
	// password in the clear). Default false.
	DisablePlain bool
}

func hashFor(mech string) (scram.HashGeneratorFcn, bool) {
	switch mech {
	case MechanismSCRAMSHA256:
		return scram.SHA256, true
	case MechanismSCRAMSHA512:
		return scram.SHA512, true
	}
	return nil, false
}

// NewCredential derives a stored credential from a password, with a
// random 24-byte salt and DefaultSCRAMIterations.
func NewCredential(user, password, mechanism string) (Credential, error) {
	h, ok := hashFor(mechanism)
	if !ok {
		return Credential{}, fmt.Errorf("%w: mechanism %q (want %s or %s)", ErrBadCredentials, mechanism, MechanismSCRAMSHA256, MechanismSCRAMSHA512)
	}
	if user == "" {
		return Credential{}, fmt.Errorf("%w: empty user name", ErrBadCredentials)
	}
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, err
	}
	cl, err := h.NewClient(user, password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %w", ErrBadCredentials, err)
	}
	sc := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: DefaultSCRAMIterations})
	return Credential{User: user, Mechanism: mechanism, Salt: salt, Iterations: DefaultSCRAMIterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// LoadCredentials reads a credentials file: one JSON Credential per line
// (blank lines and lines starting with # are skipped).
func LoadCredentials(path string) ([]Credential, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Credential
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var c Credential
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrBadCredentials, path, n, err)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

func (c Credential) check() error {
	if _, ok := hashFor(c.Mechanism); !ok || c.User == "" || len(c.Salt) == 0 || c.Iterations < 4096 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
		return fmt.Errorf("%w: user %q: want a user, SCRAM-SHA-256 or -512, a salt, at least 4096 iterations and both keys", ErrBadCredentials, c.User)
	}
	return nil
}

func (s *SASL) validate() error {
	for _, c := range s.Credentials {
		if err := c.check(); err != nil {
			return err
		}
	}
	return nil
}

// mechanisms lists what the server offers.
func (s *SASL) mechanisms() []string {
	var out []string
	if !s.DisablePlain {
		out = append(out, MechanismPlain)
	}
	for _, m := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		if slices.ContainsFunc(s.Credentials, func(c Credential) bool { return c.Mechanism == m }) {
			out = append(out, m)
		}
	}
	return out
}

func (s *SASL) lookup(user, mech string) (Credential, bool) {
	for _, c := range s.Credentials {
		if c.User == user && c.Mechanism == mech {
			return c, true
		}
	}
	return Credential{}, false
}

// checkPlain verifies a PLAIN login against the user's SCRAM credential.
func (s *SASL) checkPlain(user, password string) bool {
	for _, mech := range []string{MechanismSCRAMSHA256, MechanismSCRAMSHA512} {
		c, ok := s.lookup(user, mech)
		if !ok {
			continue
		}
		h, _ := hashFor(mech)
		cl, err := h.NewClient(user, password, "")
		if err != nil {
			return false
		}
		sc := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations})
		return hmac.Equal(sc.StoredKey, c.StoredKey)
	}
	return false
}

// scramServer returns the SCRAM server of a mechanism over the
// credentials.
func (s *SASL) scramServer(mech string) (*scram.Server, error) {
	h, ok := hashFor(mech)
	if !ok {
		return nil, fmt.Errorf("mechanism %q", mech)
	}
	return h.NewServer(func(user string) (scram.StoredCredentials, error) {
		c, ok := s.lookup(user, mech)
		if !ok {
			return scram.StoredCredentials{}, fmt.Errorf("unknown user %q", user)
		}
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations}, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
	})
}
