package transport

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxConns bounds the connections served at once.
	DefaultMaxConns = 10000
	// DefaultMaxInFlight is how many requests of one connection are
	// served at once; its responses still go back in request order.
	// Kafka's clients pipeline up to 5 (max.in.flight.requests.per.connection).
	DefaultMaxInFlight = 16
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultRequestTimeout bounds one request's handling (a produce's
	// wait for its acknowledgement, a fetch's long poll beyond its own
	// MaxWaitMs).
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultWriteTimeout bounds the write of one response to a client
	// that stopped reading.
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultAutoCreatePartitions is Kafka's num.partitions.
	DefaultAutoCreatePartitions = 1
	// DefaultClusterID is the cluster id Metadata and DescribeCluster
	// answer with.
	DefaultClusterID = "folio"
)

// Options configure a Server. A nil *Options, and every zero field, means
// the default stated on the field.
type Options struct {
	// Logger receives connection events (a malformed frame, a connection
	// closed by a limit) and server errors; at slog.LevelDebug, also one
	// record per request read ("transport: request", with its api, key,
	// version and client id), which shows what versions a client
	// negotiated. Default: discard.
	Logger *slog.Logger

	// NodeID is this broker's id in Metadata, FindCoordinator and
	// DescribeCluster. Default 0.
	NodeID int32

	// Advertise is the host:port clients are told to connect to (Kafka's
	// advertised.listeners). Default: the address of the listener Serve
	// was given (with a wildcard host, "localhost").
	Advertise string

	// ClusterID is the cluster id answered. Default DefaultClusterID.
	ClusterID string

	// MaxRequestBytes is the largest request frame accepted; a larger
	// length closes the connection. Default DefaultMaxRequestBytes.
	MaxRequestBytes int

	// MaxConns bounds the connections served at once; one more is closed
	// as it is accepted, with a log line. Default DefaultMaxConns.
	MaxConns int

	// MaxInFlight is how many requests of one connection are handled at
	// once; further requests wait in the socket. Default DefaultMaxInFlight.
	MaxInFlight int

	// IdleTimeout closes a connection that sent no request for this long
	// (while none of its requests is in flight). Default DefaultIdleTimeout.
	IdleTimeout time.Duration

	// RequestTimeout bounds the handling of one request. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration

	// WriteTimeout bounds the write of one response. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration

	// DisableAutoCreate turns off Kafka's auto.create.topics.enable: by
	// default a Metadata request that allows it, or a Produce, for a
	// topic that does not exist creates it with AutoCreatePartitions
	// partitions and the default configuration.
	DisableAutoCreate bool

	// AutoCreatePartitions is the partition count of an auto-created
	// topic. Default DefaultAutoCreatePartitions.
	AutoCreatePartitions int32

	// TLS, if set, makes Serve speak TLS on every listener (crypto/tls;
	// set ClientAuth and ClientCAs to verify client certificates). Record
	// bytes then take the copying path of the read paths: sendfile cannot
	// encrypt. Default nil: plain TCP.
	TLS *tls.Config

	// SASL, if set, requires every connection to authenticate (PLAIN,
	// SCRAM-SHA-256, SCRAM-SHA-512) before anything but ApiVersions and
	// the SASL requests. Default nil: no authentication.
	SASL *SASL
}

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.ClusterID == "" {
		r.ClusterID = DefaultClusterID
	}
	if r.MaxRequestBytes == 0 {
		r.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if r.MaxConns == 0 {
		r.MaxConns = DefaultMaxConns
	}
	if r.MaxInFlight == 0 {
		r.MaxInFlight = DefaultMaxInFlight
	}
	if r.IdleTimeout == 0 {
		r.IdleTimeout = DefaultIdleTimeout
	}
	if r.RequestTimeout == 0 {
		r.RequestTimeout = DefaultRequestTimeout
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = DefaultWriteTimeout
	}
	if r.AutoCreatePartitions == 0 {
		r.AutoCreatePartitions = DefaultAutoCreatePartitions
	}
	switch {
	case r.NodeID < 0:
		return r, fmt.Errorf("%w: NodeID %d is negative", ErrInvalidOptions, r.NodeID)
	case r.MaxRequestBytes < 0 || r.MaxRequestBytes > 1<<30:
		return r, fmt.Errorf("%w: MaxRequestBytes %d outside [1, 1 GiB]", ErrInvalidOptions, r.MaxRequestBytes)
	case r.MaxConns < 0:
		return r, fmt.Errorf("%w: MaxConns %d is negative", ErrInvalidOptions, r.MaxConns)
	case r.MaxInFlight < 0:
		return r, fmt.Errorf("%w: MaxInFlight %d is negative", ErrInvalidOptions, r.MaxInFlight)
	case r.IdleTimeout < 0, r.RequestTimeout < 0, r.WriteTimeout < 0:
		return r, fmt.Errorf("%w: negative timeout", ErrInvalidOptions)
	case r.AutoCreatePartitions < 0:
		return r, fmt.Errorf("%w: AutoCreatePartitions %d is negative", ErrInvalidOptions, r.AutoCreatePartitions)
	}
	if r.SASL != nil {
		if err := r.SASL.validate(); err != nil {
			return r, fmt.Errorf("%w: SASL: %w", ErrInvalidOptions, err)
		}
	}
	if r.Advertise != "" {
		if _, _, err := splitHostPort(r.Advertise); err != nil {
			return r, fmt.Errorf("%w: Advertise: %w", ErrInvalidOptions, err)
		}
	}
	return r, nil
}

// splitHostPort splits a host:port whose port is a number.
func splitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", port, err)
	}
	return host, int32(n), nil
}
