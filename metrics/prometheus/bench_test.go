package folioprom_test

import (
	"testing"
	"time"

	"github.com/foliolog/folio"
	folioprom "github.com/foliolog/folio/metrics/prometheus"
)

// BenchmarkHook measures the hook's cost per call on the produce path,
// against the no-op hook.
func BenchmarkHook(b *testing.B) {
	for _, bc := range []struct {
		name string
		m    folio.Metrics
	}{
		{"noop", folio.NoMetrics{}},
		{"prometheus", folioprom.New(nil)},
		{"prometheus-per-topic", folioprom.New(&folioprom.Options{DropPartitionLabel: true})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var p int32
				for pb.Next() {
					bc.m.Appended("orders", p%8, 10, 1200, 150*time.Microsecond)
					p++
				}
			})
		})
	}
}
