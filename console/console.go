package console

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/foliolog/folio"
)

// Defaults of Options.
const (
	// DefaultMaxRecords is how many records the browser shows at most.
	DefaultMaxRecords = 50
	// DefaultMaxValueBytes is how much of a key, value or header value the
	// browser shows; the rest is cut, and said to be.
	DefaultMaxValueBytes = 4 << 10
	// DefaultRefreshInterval bounds how often a read-only Broker is
	// refreshed.
	DefaultRefreshInterval = time.Second
)

// Options configure the console. A nil *Options, and every zero field,
// means the default stated on the field.
type Options struct {
	// Title is shown in the page's title and header. Default "Folio".
	Title string
	// Metrics, if set, is served at /metrics and linked from the page.
	// Default nil: no /metrics.
	Metrics http.Handler
	// MaxRecords caps the records of one browser page. Default
	// DefaultMaxRecords.
	MaxRecords int
	// MaxValueBytes caps the bytes shown of one key, value or header
	// value. Default DefaultMaxValueBytes.
	MaxValueBytes int
	// RefreshInterval is the least time between two refreshes of a
	// read-only Broker's view (folio.Broker.Refresh), each done by the
	// request that finds the view older. Default DefaultRefreshInterval;
	// negative refreshes at every request.
	RefreshInterval time.Duration
}

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes": formatBytes,
}).ParseFS(assets, "assets/*.html"))

// Console is the console's http.Handler.
type Console struct {
	b    *folio.Broker
	opts Options
	mux  *http.ServeMux

	refreshMu   sync.Mutex
	lastRefresh time.Time

	offsets offsetsFile // a read-only Broker's view of __consumer_offsets
}

// New returns the console for b. Its routes: / (topics and groups),
// /records (the record browser), /api/overview (the JSON the chart polls),
// /static/ (the embedded assets), and /metrics when Options.Metrics is set.
func New(b *folio.Broker, opts *Options) *Console {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Title == "" {
		o.Title = "Folio"
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	c := &Console{b: b, opts: o, mux: http.NewServeMux()}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", c.serveOverview)
	c.mux.HandleFunc("GET /records", c.serveRecords)
	c.mux.HandleFunc("GET /api/overview", c.serveAPI)
	if o.Metrics != nil {
		c.mux.Handle("GET /metrics", o.Metrics)
	}
	return c
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	c.mux.ServeHTTP(w, r)
}

// refresh brings a read-only Broker's view up to date, at most once per
// RefreshInterval.
func (c *Console) refresh() {
	if !c.b.ReadOnly() {
		return
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if time.Since(c.lastRefresh) < c.opts.RefreshInterval {
		return
	}
	c.lastRefresh = time.Now()
	_ = c.b.Refresh() // a failed refresh leaves the previous view, which is still shown
}

// page is what every page template gets.
type page struct {
	Title    string
	ReadOnly bool
	Metrics  bool
	Dir      string
	Now      time.Time
	Data     any
	Err      string
}

func (c *Console) render(w http.ResponseWriter, name string, status int, data any, errText string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages.ExecuteTemplate(w, name, page{
		Title: c.opts.Title, ReadOnly: c.b.ReadOnly(), Metrics: c.opts.Metrics != nil,
		Dir: c.b.Dir(), Now: time.Now(), Data: data, Err: errText,
	})
}

func (c *Console) serveOverview(w http.ResponseWriter, r *http.Request) {
	c.refresh()
	ov, err := c.overview(r.Context())
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, "overview.html", http.StatusOK, ov, msg)
}

func (c *Console) serveAPI(w http.ResponseWriter, r *http.Request) {
	c.refresh()
	ov, err := c.overview(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	out := apiOverview{Time: time.Now().UnixMilli(), Out: c.outSource()}
	if err != nil {
		out.Error = err.Error()
	}
	for _, t := range ov.Topics {
		out.Topics = append(out.Topics, apiTopic{Name: t.Name, Internal: t.Internal, LogEndOffset: t.LogEndOffset, Records: t.Records, Bytes: t.Bytes, RecordsOut: t.RecordsOut})
	}
	for _, g := range ov.Groups {
		ag := apiGroup{Name: g.Group, State: g.State, Lag: g.TotalLag, Committed: g.TotalCommitted}
		for _, l := range g.Lag {
			ag.Partitions = append(ag.Partitions, apiLag{Topic: l.Topic, Partition: l.Partition, Committed: l.Committed, HighWatermark: l.HighWatermark, Lag: l.Lag})
		}
		out.Groups = append(out.Groups, ag)
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Where the chart's "records out" comes from (apiOverview.Out).
const (
	// outReads: the records the Broker's readers were handed (topics'
	// recordsOut), when the console runs in the process that serves them.
	outReads = "reads"
	// outCommitted: the rise of groups' committed offsets, an estimate,
	// for a read-only Broker beside another process's readers, whose
	// reads it cannot see.
	outCommitted = "committed"
)

// outSource says where the chart's records out come from for c's Broker.
func (c *Console) outSource() string {
	if c.b.ReadOnly() {
		return outCommitted
	}
	return outReads
}

// apiOverview is the JSON of /api/overview: cumulative numbers, from which
// the page computes rates between two polls.
type apiOverview struct {
	Time int64 `json:"time"` // Unix milliseconds
	// Out is outReads or outCommitted: which numbers give records out.
	Out    string     `json:"out"`
	Topics []apiTopic `json:"topics"`
	Groups []apiGroup `json:"groups"`
	Error  string     `json:"error,omitempty"`
}

type apiTopic struct {
	Name         string `json:"name"`
	Internal     bool   `json:"internal,omitempty"`
	LogEndOffset int64  `json:"logEndOffset"` // summed over partitions
	Records      int64  `json:"records"`      // high watermark - log start, summed
	Bytes        int64  `json:"bytes"`
	RecordsOut   int64  `json:"recordsOut"` // records handed to readers (Out == outReads)
}

type apiGroup struct {
	Name       string   `json:"name"`
	State      string   `json:"state"`
	Lag        int64    `json:"lag"`
	Committed  int64    `json:"committed"` // committed offsets summed: their rise is the group's consumption
	Partitions []apiLag `json:"partitions"`
}

type apiLag struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Committed     int64  `json:"committed"`
	HighWatermark int64  `json:"highWatermark"`
	Lag           int64  `json:"lag"`
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[i]
}
