package folioprom_test

import (
	"log"
	"net/http"

	"github.com/foliolog/folio"
	folioprom "github.com/foliolog/folio/metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A Broker's metrics on a registry of the application's, served at /metrics.
func Example() {
	m := folioprom.New(&folioprom.Options{DropPartitionLabel: false})
	b, err := folio.Open("folio-data", &folio.Options{Metrics: m})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	m.Attach(b)

	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe("localhost:9100", nil))
}
