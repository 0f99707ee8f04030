package transport

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v1 (v0's unframed tokens are not served): picks the
// mechanism of the SaslAuthenticate exchange that follows. Without
// Options.SASL every mechanism is UNSUPPORTED_SASL_MECHANISM. Handled on
// the connection's reader, before the next request is read, as the SASL
// exchange is a sequence.
func init() { register(kmsg.SASLHandshake.Int16(), 1, 1, handleSASLHandshake) }

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
		resp.SupportedMechanisms = sasl.mechanisms()
	}
	return kmsgResp{resp}, nil
}
