package transport

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v0..v1: picks the mechanism of the exchange that follows,
// in SaslAuthenticate requests after v1, and after v0 in unframed tokens
// (a length and the token's bytes each way, conn.saslToken), which
// kafka-python 2.0 sends and whose listing librdkafka before the fix of
// its issue 4983 requires for any SASL login. Without Options.SASL every
// mechanism is UNSUPPORTED_SASL_MECHANISM. Handled on the connection's
// reader, before the next request is read, as the SASL exchange is a
// sequence.
func init() { register(kmsg.SASLHandshake.Int16(), 0, 1, handleSASLHandshake) }

func handleSASLHandshake(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = req.Version
	c, sasl := rc.c, rc.s.opts.SASL
	switch {
	case sasl == nil:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	case c.authed:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = sasl.mechanisms()
	case !slices.Contains(sasl.mechanisms(), req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = sasl.mechanisms()
	default:
		c.mech, c.scram = req.Mechanism, nil
		c.rawSASL = req.Version == 0
		resp.SupportedMechanisms = sasl.mechanisms()
	}
	return kmsgResp{resp}, nil
}
