package transport

import (
	"context"

	"github.com/foliolog/folio/errs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0..v4, for idempotent producers: a fresh producer id
// (durable: never handed out twice in a data directory, across restarts)
// at epoch 0. A producer that names its current id and epoch (v3+, KIP-360,
// after an unknown outcome) gets the same id with the epoch bumped, which
// the partitions accept as a fresh sequence; at the last epoch it gets a
// new id instead. A transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal error in every client:
// transactions are not served.
func init() { register(kmsg.InitProducerID.Int16(), 0, 4, handleInitProducerID) }

func handleInitProducerID(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = req.Version
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return kmsgResp{resp}, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < 32766 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return kmsgResp{resp}, nil
	}
	id, err := rc.s.b.AllocateProducerID()
	if err != nil {
		resp.ErrorCode = errs.Code(err)
		return kmsgResp{resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return kmsgResp{resp}, nil
}
