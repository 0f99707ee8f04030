package transport

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler answers one decoded request. It returns the response to send
// (nil: none, as for a Produce with acks=0) or an error that closes the
// connection; errors a client should see are error codes in the response.
type handler func(ctx context.Context, rc *reqCtx, req kmsg.Request) (response, error)

// api is one registered API: its key, the versions served and its handler.
type api struct {
	key      int16
	min, max int16
	h        handler
}

// apis is the registry, indexed by API key; filled by the init functions
// of the NN_name.go files, so ApiVersions advertises exactly what they
// implement.
var apis = map[int16]*api{}

// register adds an API. Each file registers its own in init.
func register(key, minVersion, maxVersion int16, h handler) {
	if _, dup := apis[key]; dup {
		panic("transport: API key registered twice")
	}
	if kmsg.RequestForKey(key) == nil || maxVersion > kmsg.RequestForKey(key).MaxVersion() || minVersion > maxVersion {
		panic("transport: API versions kmsg cannot decode")
	}
	apis[key] = &api{key: key, min: minVersion, max: maxVersion, h: h}
}

// lookupAPI returns the API of a key and whether version is served.
func lookupAPI(key, version int16) (*api, bool) {
	a := apis[key]
	if a == nil {
		return nil, false
	}
	return a, version >= a.min && version <= a.max
}

// registered returns the registered APIs by key.
func registered() []*api {
	out := make([]*api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}
