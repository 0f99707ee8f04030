// Package transport serves the Kafka wire protocol for a Folio data
// directory, so that Kafka clients in any language produce to and fetch
// from it over TCP, and an application that outgrows one machine points
// the same client code at an Apache Kafka cluster.
//
// # Model
//
// NewServer takes a Backend (what the server needs of the data directory;
// *folio.Broker satisfies it, and this package never imports the root
// package) and Options. Serve accepts connections on a listener until
// Shutdown, which stops accepting, lets the requests already read finish
// and their responses go out, and closes the connections.
//
// Each API family lives in its own file named after its key
// (00_produce.go, 01_fetch.go, ...), which registers the versions it
// serves: ApiVersions advertises exactly those. Requests and responses are
// encoded and decoded with franz-go's kmsg, and error codes come from
// errs.Kafka, the one mapping of Folio's errors to Kafka's codes. The one
// exception is the Fetch response, whose framing around the record bytes
// this package writes itself (fetch_frame.go) so that the bytes go from the
// segment to the socket through the topic's read path: positional sendfile
// for read.path=sendfile, one write from the mapping for mmap, a copy under
// TLS. A record set larger than the socket buffer is never held in memory.
//
// # Connections and limits
//
// A connection's requests are handled concurrently, up to
// Options.MaxInFlight, and answered in request order. Every limit is
// bounded: the request size (MaxRequestBytes, Kafka's 100 MiB
// socket.request.max.bytes), the connections (MaxConns), an idle
// connection (IdleTimeout), a request's handling (RequestTimeout) and a
// response's write (WriteTimeout). A frame the server cannot read (a
// length out of bounds, a short header, an unknown API key or version,
// bytes kmsg cannot decode) closes that one connection with a log line;
// the other connections and the Backend carry on. Nothing panics on input:
// a handler's panic closes its connection and is logged.
//
// # Security
//
// Options.TLS serves TLS (crypto/tls, optionally verifying client
// certificates); record bytes are then copied, as sendfile cannot encrypt.
// Options.SASL requires PLAIN or SCRAM-SHA-256/512 logins against stored
// SCRAM credentials (NewCredential, LoadCredentials: salted keys, never
// passwords) before anything but ApiVersions and the SASL requests.
//
// # Fetch
//
// A fetch with fewer than MinBytes ready parks on one channel of its own,
// woken by one callback per partition (partition.WaitFunc) when the high
// watermark passes its offset: no goroutine per partition, no polling.
// Fetch sessions (KIP-227) are not kept: every answer carries session id 0,
// which Kafka's clients take as "no session" and send full fetches.
//
// # Caveats
//
//   - One broker in Metadata: every partition is led by Options.NodeID at
//     leader epoch 0. Followers' fetches (replica id >= 0) are served as a
//     Kafka leader serves them when the Backend is a ReplicaBackend (see
//     01_fetch.go); Metadata with real leaders comes with the wiring of
//     replication into the root.
//   - Transactions are not served: a transactional producer gets
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED from InitProducerId, a fatal
//     error in Kafka's clients, rather than a hang.
package transport
