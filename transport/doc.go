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
// passwords) before anything but ApiVersions and the SASL requests. The
// tokens come in SaslAuthenticate requests after a SaslHandshake v1, or
// bare after a v0 (kafka-python 2.0); librdkafka's SCRAM final message,
// which repeats its client nonce before the combined nonce, is accepted
// as Kafka accepts it, its proof checked (scram_librdkafka.go).
//
// # Fetch
//
// A fetch with fewer than MinBytes ready parks on one channel of its own,
// woken by one callback per partition (partition.WaitFunc) when the high
// watermark passes its offset: no goroutine per partition, no polling.
// Fetch sessions (KIP-227) are not kept: every answer carries session id 0,
// which Kafka's clients take as "no session" and send full fetches.
//
// # Clients tested
//
// The project's tests drive these clients against a real endpoint
// (kafkatest.New); for each, the API versions its requests used, as the
// server's debug log records them (Options.Logger):
//
//   - franz-go v1.22 (kgo, kadm) and segmentio/kafka-go v0.4: every codec
//     and idempotence, consumers from the start, the end and a time,
//     groups, DeleteRecords, topic admin, TLS, SASL (transport's tests).
//     kgo sends the highest version listed: ApiVersions v5 (answered
//     UNSUPPORTED_VERSION, then v4), Metadata v12, Produce v13,
//     InitProducerId v4, Fetch v16, ListOffsets v8, FindCoordinator v5,
//     JoinGroup v9, SyncGroup v5, LeaveGroup v5, OffsetCommit v9,
//     OffsetFetch v9, DescribeGroups v5, CreateTopics v7. kafka-go:
//     ApiVersions v0, Metadata v6 and v8, Produce v8, Fetch v10,
//     ListOffsets v1, FindCoordinator v0, JoinGroup v2, SyncGroup v0,
//     LeaveGroup v0, OffsetCommit v2, OffsetFetch v1.
//   - librdkafka 2.0.2 through kcat 1.7.1 (Debian 12), which is what its
//     bindings (confluent-kafka-python, -go, -dotnet) speak: ApiVersions
//     v3, Metadata v4, Produce v7, InitProducerId v4, Fetch v11,
//     ListOffsets v2, FindCoordinator v2, JoinGroup v5, SyncGroup v3,
//     Heartbeat v3, LeaveGroup v1, OffsetCommit v7, OffsetFetch v7. It
//     compresses with gzip, snappy or lz4 only if Produce v0 is listed,
//     so Produce is listed from v0 and served from v3, as Kafka 4 does
//     (KAFKA-18659); a request below v3 closes its connection. Its SASL
//     logins (SaslHandshake v1, SaslAuthenticate v0) need SaslHandshake
//     v0 listed, and its SCRAM final message repeats its nonce: both
//     served.
//   - kafka-python 2.0.2 (Debian 12): ApiVersions v0, Metadata v0, v1 and
//     v5, Produce v7, Fetch v4, ListOffsets v1, FindCoordinator v0,
//     JoinGroup v2, SyncGroup v1, LeaveGroup v1, OffsetCommit v2,
//     OffsetFetch v1, CreateTopics v3; its SASL logins use SaslHandshake
//     v0 and bare tokens.
//   - kafkajs 2.2.4: ApiVersions v2, Metadata v6, Produce v7,
//     InitProducerId v1, Fetch v11, ListOffsets v3, FindCoordinator v2,
//     JoinGroup v5, SyncGroup v3, LeaveGroup v3, OffsetCommit v5,
//     OffsetFetch v4, DescribeGroups v2, ListGroups v2, CreateTopics v3,
//     DeleteTopics v1, CreatePartitions v1, DescribeConfigs v2;
//     SaslHandshake v1, SaslAuthenticate v1.
//
// Each of these three logs in with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
// in the tests, and is refused with a wrong password, and produces and
// consumes over TLS, verifying the server's certificate.
//
// The Java client (kafka-clients, kafkatest/java_test.go) is tested where
// Maven Central is reachable, which this project's machines are not: the
// test then skips. Against a kafka-clients 4.0.0 build it used
// ApiVersions v4, Metadata v12, Produce v11, InitProducerId v4, Fetch v16,
// ListOffsets v8, OffsetForLeaderEpoch v4, FindCoordinator v5, JoinGroup
// v9, SyncGroup v5, Heartbeat v4, LeaveGroup v5, OffsetCommit v9,
// OffsetFetch v9, DescribeGroups v5, DeleteGroups v2, CreateTopics v7,
// DeleteTopics v6, CreatePartitions v3, DescribeConfigs v4,
// IncrementalAlterConfigs v1, DeleteRecords v2 and DescribeCluster v1,
// and SaslHandshake v1 with SaslAuthenticate v2 for PLAIN and SCRAM: the
// highest version both sides list, as kgo does.
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
