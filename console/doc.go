// Package console serves a read-only web console for a folio.Broker, in the
// manner of Kafka's consoles: topics with their partitions, offsets, sizes
// and retention; consumer groups with their state, members, assignments
// and lag per partition; a live chart of records in and out per second and
// of group lag (short polling of a JSON endpoint); and a record browser for
// one partition, from an offset or a time, with keys, values and headers
// shown as text when they are printable UTF-8 and as hex otherwise.
//
// New returns an http.Handler that an application mounts beside its own
// handlers, on its own Broker:
//
//	http.Handle("/console/", http.StripPrefix("/console", console.New(b, nil)))
//
// The console never writes: it produces nothing, commits nothing, and never
// makes the Broker create __consumer_offsets. Beside an application that
// holds the data directory, open the directory with folio.OpenReadOnly,
// which takes no lock: the console then refreshes the Broker's view at most
// once a second, and reads consumer groups' committed offsets and
// memberships from the files of __consumer_offsets itself, since a
// read-only Broker has no group coordinator.
//
// Records out are the records the Broker's readers were handed
// (folio.PartitionStats.RecordsOut: its Consumers' polls and Kafka clients'
// fetches through folio serve). A read-only Broker cannot see another
// process's readers, so beside an application the chart shows instead the
// rise of consumer groups' committed offsets, and says it is an estimate.
//
// Everything shown is escaped by html/template, and the page's script
// writes text only (textContent), so a record cannot inject markup or
// script. The page's assets are embedded: no build step, no CDN.
//
// The package has no dependency outside the standard library and this
// module; Options.Metrics mounts a /metrics handler the caller supplies
// (for example promhttp's, with the collector of
// github.com/foliolog/folio/metrics/prometheus).
package console
