package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions v0..v4 (flexible from v3). The answer lists exactly the APIs
// registered in this package, with their version ranges (Produce's from
// v0, as Kafka 4's: see advertiseFrom). A version the
// server does not serve is answered in v0 with UNSUPPORTED_VERSION and the
// list (conn.decode), as Kafka does, so a client newer than the server
// retries with a version both know.
func init() { register(kmsg.ApiVersions.Int16(), 0, 4, handleAPIVersions) }

var kerrUnsupportedVersion = kerr.UnsupportedVersion.Code

func handleAPIVersions(_ context.Context, rc *reqCtx, req kmsg.Request) (response, error) {
	return kmsgResp{apiVersionsResponse(req.GetVersion(), 0)}, nil
}

func apiVersionsResponse(version int16, code int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	resp.ErrorCode = code
	for _, a := range registered() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.advMin, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
