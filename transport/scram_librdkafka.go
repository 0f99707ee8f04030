package transport

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// librdkafka (2.0.2, Debian 12's, and the releases around it) sends a
// SCRAM client-final-message whose nonce is its own client nonce followed
// by the whole combined nonce of the server-first-message, instead of the
// combined nonce alone (RFC 5802 section 7). Kafka accepts it (its server
// checks that the nonce ends with the combined nonce); xdg-go/scram's
// server requires equality and refused every librdkafka SCRAM login with
// "nonce received did not match nonce sent". scramFinalDoubledNonce
// verifies that one form, and only it: the client nonce exactly, then the
// combined nonce. The proof is checked over the AuthMessage the client
// signed, which carries the nonce as sent, so the exchange is as bound to
// this server's nonce as the standard one. Every other final message goes
// to xdg-go/scram.

// scramAttr returns the value of attribute key ("r") in a SCRAM message's
// comma-separated attributes.
func scramAttr(msg string, key byte) (string, bool) {
	for part := range strings.SplitSeq(msg, ",") {
		if len(part) >= 2 && part[0] == key && part[1] == '=' {
			return part[2:], true
		}
	}
	return "", false
}

// doubledNonce reports whether clientFinal carries librdkafka's nonce:
// the client nonce of clientFirst followed by the combined nonce of
// serverFirst.
func doubledNonce(clientFirst, serverFirst, clientFinal string) bool {
	_, bare, ok := cutGS2(clientFirst)
	if !ok {
		return false
	}
	cnonce, ok1 := scramAttr(bare, 'r')
	combined, ok2 := scramAttr(serverFirst, 'r')
	got, ok3 := scramAttr(clientFinal, 'r')
	return ok1 && ok2 && ok3 && cnonce != "" && got == cnonce+combined
}

// cutGS2 splits a client-first-message into its GS2 header ("n,," with
// the commas) and the bare message.
func cutGS2(clientFirst string) (gs2, bare string, ok bool) {
	i := strings.IndexByte(clientFirst, ',')
	if i < 0 {
		return "", "", false
	}
	j := strings.IndexByte(clientFirst[i+1:], ',')
	if j < 0 {
		return "", "", false
	}
	n := i + 1 + j + 1
	return clientFirst[:n], clientFirst[n:], true
}

// scramFinalDoubledNonce verifies a client-final-message in librdkafka's
// form (doubledNonce) against the stored credential of the user named in
// clientFirst, and returns the user and the server-final-message.
func (s *SASL) scramFinalDoubledNonce(mech, clientFirst, serverFirst, clientFinal string) (user, serverFinal string, err error) {
	gs2, bare, ok := cutGS2(clientFirst)
	if !ok {
		return "", "", errors.New("malformed client-first-message")
	}
	name, ok := scramAttr(bare, 'n')
	if !ok {
		return "", "", errors.New("no user name in client-first-message")
	}
	user = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(name)
	cred, ok := s.lookup(user, mech)
	if !ok {
		return "", "", fmt.Errorf("unknown user %q", user)
	}
	i := strings.LastIndex(clientFinal, ",p=")
	if i < 0 {
		return "", "", errors.New("no proof in client-final-message")
	}
	withoutProof, proofB64 := clientFinal[:i], clientFinal[i+3:]
	if cb, ok := scramAttr(withoutProof, 'c'); !ok || cb != base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return "", "", errors.New("channel binding does not match the GS2 header")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return "", "", errors.New("proof is not base64")
	}
	h, _ := hashFor(mech)
	authMessage := []byte(bare + "," + serverFirst + "," + withoutProof)
	mac := hmac.New(h, cred.StoredKey)
	mac.Write(authMessage)
	clientSig := mac.Sum(nil)
	if len(proof) != len(clientSig) {
		return "", "", errors.New("challenge proof invalid")
	}
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ clientSig[k]
	}
	sum := h()
	sum.Write(clientKey)
	if !hmac.Equal(sum.Sum(nil), cred.StoredKey) {
		return "", "", errors.New("challenge proof invalid")
	}
	mac = hmac.New(h, cred.ServerKey)
	mac.Write(authMessage)
	return user, "v=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
