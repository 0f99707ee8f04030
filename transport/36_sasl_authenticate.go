package transport

import (
	"bytes"
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate v0..v2: the tokens of the mechanism SaslHandshake
// chose. PLAIN is one message ("authzid NUL user NUL password"); SCRAM is
// RFC 5802's two round trips (xdg-go/scram, but for librdkafka's final
// message: scram_librdkafka.go). A failed login answers
// SASL_AUTHENTICATION_FAILED and closes the connection, as Kafka does.
func init() { register(kmsg.SASLAuthenticate.Int16(), 0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = req.Version
	cfg, cn := rc.s.opts.SASL, rc.c
	fail := func(code *kerr.Error, msg string) (response, error) {
		resp.ErrorCode = code.Code
		resp.ErrorMessage = &msg
		cn.closeAfter = true
		rc.c.log.Warn("transport: SASL authentication failed", "mechanism", cn.mech, "err", msg)
		return kmsgResp{resp}, nil
	}
	switch {
	case cfg == nil || cn.mech == "" || cn.authed:
		return fail(kerr.IllegalSaslState, "transport: SaslAuthenticate without a SaslHandshake")
	case cn.mech == MechanismPlain:
		parts := bytes.Split(req.SASLAuthBytes, []byte{0})
		if len(parts) != 3 || !cfg.checkPlain(string(parts[1]), string(parts[2])) {
			return fail(kerr.SaslAuthenticationFailed, "transport: authentication failed: invalid user name or password")
		}
		cn.authed, cn.user = true, string(parts[1])
		return kmsgResp{resp}, nil
	}
	msg := string(req.SASLAuthBytes)
	if cn.scram == nil {
		srv, err := cfg.scramServer(cn.mech)
		if err != nil {
			return fail(kerr.UnsupportedSaslMechanism, err.Error())
		}
		cn.scram = srv.NewConversation()
		cn.scramFirst, cn.scramServerFirst = msg, ""
	} else if doubledNonce(cn.scramFirst, cn.scramServerFirst, msg) {
		// librdkafka's final message (scram_librdkafka.go).
		user, out, err := cfg.scramFinalDoubledNonce(cn.mech, cn.scramFirst, cn.scramServerFirst, msg)
		if err != nil {
			return fail(kerr.SaslAuthenticationFailed, fmt.Sprintf("transport: authentication failed: %v", err))
		}
		resp.SASLAuthBytes = []byte(out)
		cn.authed, cn.user = true, user
		return kmsgResp{resp}, nil
	}
	out, err := cn.scram.Step(msg)
	if err != nil {
		return fail(kerr.SaslAuthenticationFailed, fmt.Sprintf("transport: authentication failed: %v", err))
	}
	resp.SASLAuthBytes = []byte(out)
	if cn.scramServerFirst == "" {
		cn.scramServerFirst = out
	}
	if cn.scram.Done() {
		if !cn.scram.Valid() {
			return fail(kerr.SaslAuthenticationFailed, "transport: authentication failed")
		}
		cn.authed, cn.user = true, cn.scram.Username()
	}
	return kmsgResp{resp}, nil
}
