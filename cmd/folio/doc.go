// Command folio inspects and edits a Folio data directory from the shell,
// in the spirit of kcat and Kafka's command-line tools.
//
// Usage:
//
//	folio <command> [flags]
//
// The command is a module of its own (github.com/foliolog/folio/cmd/folio,
// so that serve can import folioprom without the library depending on
// Prometheus); from the repository root, build it once with
//
//	go build -C cmd/folio -o "$PWD/bin/folio" .
//
// and run ./bin/folio.
//
// Flags follow the command. Every command takes -dir, the data directory
// (default ./folio-data, the one examples/quickstart writes). folio help,
// folio <command> -h and folio help <command> print the usage on stderr.
//
// # Commands that write
//
// These open the directory as an application does (folio.Open): they take
// its lock, so while an application holds it they fail at once with a
// message naming the holder's pid and host and what to do: stop it, or use
// a command that only reads.
//
//	folio topics create -topic T [-partitions N] [-retention.ms 7d] [-flush sync] [-config key=value ...]
//
// Creates a topic. Every topic setting is a flag of its own (partitions,
// retention.bytes, retention.ms, segment.bytes, segment.ms, flush,
// read.path, cleanup.policy, min.cleanable.dirty.ratio,
// min.compaction.lag.ms, delete.retention.ms, message.timestamp.type,
// max.message.bytes, compression.type) and can also be given as -config
// key=value; values take the syntax the topic catalog stores ("7d",
// "512MiB", "interval:100ms", "every:1000", "unlimited", "0.5"). A missing
// directory is created.
//
//	folio topics delete -topic T
//
// Deletes a topic and its records.
//
//	folio produce -topic T [-partition P] [-K delim] [-report] [-batch-bytes N]
//
// Appends one record per line of stdin, as lines arrive: stdin may be a
// stream that never ends (SIGINT or SIGTERM stops it: the lines handed to
// the producer before it are still appended, and the directory is closed
// cleanly). Without -K the line
// is the value and the record has no key; with -K the line is key,
// delimiter, value, split at the first delimiter ("\t" is a tab), and a line
// without the delimiter has no key. Keyed records go where Kafka's
// partitioner puts them, unkeyed ones stick to a partition per batch,
// -partition sends all to one. A missing topic is created with the default
// settings, as Kafka's auto.create.topics.enable does, and a line on stderr
// says so (a mistyped -topic is seen at once). With -report, each acknowledged record prints
// "line<TAB>partition<TAB>offset" (line is its 1-based line number) in the
// order of acknowledgement, flushed as it comes. A record that is not
// acknowledged (for example a line longer than the topic's
// max.message.bytes) stops the run with an error naming its line; records
// of earlier lines stay written. -batch-bytes (default 64KiB, Kafka's
// batch.size) is how many bytes of lines go in one batch; a longer line
// goes in a batch of its own, so any line up to the topic's
// max.message.bytes is produced whatever -batch-bytes says.
//
//	folio serve [-listen HOST:PORT] [-advertise HOST:PORT] [-partitions N] [-no-auto-create] [-v]
//	            [-tls-cert FILE -tls-key FILE [-tls-client-ca FILE]] [-sasl-users FILE] [-http HOST:PORT]
//
// With -http it also serves the read-only web console (package console) of
// the same Broker and, at /metrics, its Prometheus metrics (package
// folioprom, on a registry of its own with the Go and process collectors),
// and prints "console on http://ADDR/" and "metrics on
// http://ADDR/metrics" after the listening line.
//
// Serves the data directory to Kafka clients over TCP (package transport):
// produce, fetch, offsets, metadata, idempotent producers. It takes the
// directory's lock, prints "listening on ADDR" on stdout once it accepts
// connections (with -listen HOST:0 the real port), logs with slog on
// stderr, and on SIGINT or SIGTERM stops accepting, lets the requests in
// flight finish (30 s at most) and closes the directory cleanly. A topic a
// client names is created with -partitions partitions unless
// -no-auto-create. With -tls-cert and -tls-key it speaks TLS (record bytes
// are then copied, not sendfile'd); -tls-client-ca requires client
// certificates signed by that CA. With -sasl-users every client must log
// in (SCRAM-SHA-256/512, and PLAIN under TLS) as a user of the file, whose
// lines folio sasl-user prints:
//
//	folio sasl-user -user U [-mechanism SCRAM-SHA-256|SCRAM-SHA-512] < password >> users
//
// (a salt, an iteration count and the derived keys: never the password).
// A bad flag, a held directory or a port in
// use is one line on stderr and a non-zero exit.
//
//	folio groups reset -group G -topic T -to earliest|latest|OFFSET|TIME [-partition P] [-dry-run]
//
// Moves a consumer group's committed offsets in a topic's partitions (all,
// or -partition): to the log start, to the end, to an offset, or to the
// first record at or after a time (RFC 3339, or 2006-01-02T15:04:05 and
// 2006-01-02 in UTC; a time after every record means the end). It prints
// the old and new offsets; -dry-run stops there, and its last line says
// that nothing was committed. Taking the lock makes sure no member of the
// group runs, as Kafka requires an empty group.
//
//	folio consume -group G -topic T [-offset beginning|end] [-n count] [-e] [-f format] [-commit-interval 5s]
//
// Consumes as a member of the consumer group G: the group's coordinator
// assigns the partitions (several members, in several processes in turn,
// share the work; every group gets every record), partitions without a
// committed offset start at -offset (beginning by default, as the
// library's GroupOptions.Reset: a new group reads the backlog). The offsets
// after the records printed are committed every -commit-interval and
// before the command exits (at -n, at the end with -e, on SIGINT or
// SIGTERM), always after the output was flushed: a record is committed
// only once printed.
//
// # Commands that only read
//
// These never take the lock and never write: they open the files
// read-only, so they work while an application writes the directory, and
// they stop at the last complete valid batch (a batch being written is not
// seen until it is whole).
//
//	folio topics list
//	folio topics describe [-topic T]
//
// List the topics; describe shows each one's id, configuration with every
// default spelled out, and per partition the start and end offsets, segment
// count and size in bytes.
//
//	folio consume -topic T [-partition P] [-offset beginning|end|N|-N] [-n count] [-e] [-f format]
//
// Prints records. -offset starts each partition at its beginning (the
// default), its end (only records appended from now on), offset N, or N
// records before the end (-N). -n stops after count records; -e exits at
// the end of the log; without it consume follows the log as it grows until
// SIGINT or SIGTERM. -f takes kcat's format tokens: %t topic, %p partition,
// %o offset, %k key, %s value, %T timestamp (Unix milliseconds), %h headers
// (key=value pairs joined by commas; a null value prints the key alone), %K
// and %S the key and value lengths (-1 for null), %% a percent sign, and the
// escapes \n, \t, \r, \\. The default is "%s\n". Partitions are read in turn
// (about 1 MiB of each per turn); records of one partition come in offset
// order. Transaction markers are not printed.
//
//	folio dump -topic T [-partition P]
//	folio dump -file path/to/00000000000000000000.log
//
// Prints every batch (base and last offset, count, producer id, epoch and
// sequences, leader epoch, position, timestamp, size, codec, crcValid) and
// every record (offset, timestamp, key and value sizes, sequence, header
// keys, key, payload) of every segment, as Kafka's kafka-dump-log
// --print-data-log does. Keys and payloads that are not printable text are
// printed Go-quoted. Damaged batches are marked with "!" and make dump exit
// non-zero; a batch whose header is intact but whose CRC fails is still
// printed, with crcValid: false.
//
//	folio verify [-topic T]
//
// Checks the whole directory with the owners' read-only checkers: the
// frames and checksums of the Broker's metadata files (folio.CheckMetadata)
// and of the topic catalog; every segment as recovery judges it
// (segment.Verify: framing, CRC and offsets of every batch, every offset-
// and time-index entry against the batch it points at); and on top, that
// every record decodes and that segments do not overlap. It prints
// a PROBLEM line per damage (file, byte position, batch offset) and NOTE
// lines for states a crash or a live application leaves and the next open
// handles (an incomplete last batch in a directory not closed cleanly, an
// index ahead of its log there, leftover files), then a summary, and exits
// non-zero if there was any problem.
//
//	folio groups [-group G]
//
// Prints every group's committed offsets, with the log end and the lag of
// each partition, and when each offset was committed. The other partitions
// of the topics a group committed in or its members subscribed to are
// listed too, with "-" as their offset and, as lag, every record from the
// log start (where a new member starts by default). Then each group's
// state, generation, protocol, leader, member count and when it entered
// the state; then each member (member id, group instance id, client id
// and host) with the partitions assigned to it. It reads the records of
// __consumer_offsets from the files (the last commit of a partition wins;
// a reset or a deletion overrides earlier ones; the last group metadata
// record of a group is its membership, a tombstone removes it), so it
// works beside the application. The coordinator writes a group's metadata
// record when a generation's assignment completes and when the group
// becomes Empty, so the members shown are those of the latest completed
// rebalance; a rebalance in progress is not shown. A process that stopped
// without its members leaving (a crash) leaves them listed until the next
// open of the directory records the group Empty. A group without a
// metadata record (offsets committed without members) shows as Empty with
// generation "-".
//
// # Exit status and errors
//
// 0 on success and for help asked for, 2 for a command line that cannot
// run (unknown command or flag, a flag value that does not parse, missing
// -topic, bad -offset or -f), 1 for every other failure. A failure is one
// line on stderr, "folio <command>: <problem>", naming the directory,
// topic, file and position concerned, with nothing on stdout but what the
// command printed before it failed; the usage text is never printed with
// an error. Bad input never panics.
//
// # Caveats
//
//   - A following consume learns of records another process appended by
//     checking the files again every -interval (default 100 ms): across
//     processes there is no notification to wait on (a Broker's waiters
//     live in its memory), and the tool uses no inotify or kqueue so that it
//     behaves alike everywhere. Inside one process, folio's Consumer blocks
//     on a notification instead.
//   - The read commands see what is in the files: up to the last complete
//     batch, which under FlushSync may include records not yet fsynced and
//     so not yet acknowledged or visible to the application's own consumers
//     (its high watermark is the fsynced end). A power cut could still take
//     those back.
//   - The partition start comes from the first segment and the checkpoint
//     file (which DeleteRecordsBefore rewrites before it returns).
//   - A listing of a partition directory taken while the writer rolls
//     segments may miss the newest ones; consume never skips a segment
//     (it finds the next one by the offset it starts at, and confirms one
//     past a gap with a second listing), but verify and dump check the
//     segments their one listing showed.
package main
