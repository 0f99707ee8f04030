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
	// advMin is the lowest version ApiVersions advertises: min, but for
	// Produce (see advertiseFrom).
	advMin int16
	h      handler
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
	apis[key] = &api{key: key, min: minVersion, max: maxVersion, advMin: minVersion, h: h}
}

// advertiseFrom makes ApiVersions advertise the registered key from
// version v, below the versions served. It is for one case, Kafka's own
// (KAFKA-18659): librdkafka releases without the fix of its issue 4956
// (Debian 12's 2.0.2 among them) compress with gzip, snappy or lz4 only if
// the broker lists Produce v0, and send those batches uncompressed
// otherwise, so Kafka 4 lists Produce from v0 though it serves v3 and up. A client picks the highest version both
// sides list, so no client that knows v3 sends less; a request below min
// still closes its connection, as any version not served does.
func advertiseFrom(key, v int16) {
	a := apis[key]
	if a == nil || v > a.min {
		panic("transport: advertiseFrom on an API not registered, or above its served range")
	}
	a.advMin = v
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
