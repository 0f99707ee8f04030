package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartSeries is one line of the chart: a path's figures by record size.
type chartSeries struct {
	Label  string
	Points []chartPoint
}

type chartPoint struct {
	Record float64 // bytes
	// Throughput is in MB/s; CPU in ns per byte of the process that reads
	// (in-process) or sends (TCP), the figure the choice of a read path
	// rests on.
	Throughput, CPU summary
}

// Chart defaults: Kafka's producer batch.size and consumer
// max.partition.fetch.bytes, the sizes the chart holds fixed when the run
// measured them.
const (
	chartBatch = "16 KiB"
	chartFetch = "1 MiB"
)

// cpuColumns are the read tables' CPU-per-byte columns of the process
// whose cost a read path decides: the in-process reader, the TCP sender.
var cpuColumns = []string{"CPU", "sender CPU"}

// chartData picks from the read-paths tables the rows the chart compares:
// warm cache, one consumer, and one batch and fetch size (chartBatch and
// chartFetch when measured, else the first measured). Holding those fixed
// leaves record size as the only variable along the x axis.
func chartData(r *report) (series []chartSeries, caption string, err error) {
	type row struct {
		where    string
		pv       map[string]string
		thr, cpu summary
	}
	var rows []row
	batch, fetchSize := "", ""
	for _, t := range r.Tables {
		if t.Suite != suiteReadPaths {
			continue
		}
		where := "in-process"
		if strings.Contains(t.Title, "TCP") {
			where = "TCP"
		}
		thr := slices.IndexFunc(t.Columns, func(c column) bool { return c.Name == "throughput" })
		cpu := slices.IndexFunc(t.Columns, func(c column) bool { return slices.Contains(cpuColumns, c.Name) })
		if thr < 0 {
			continue
		}
		for _, rr := range t.Rows {
			pv := map[string]string{}
			for _, p := range rr.Params {
				pv[p.Name] = p.Value
			}
			if pv["consumers"] != "1" || !strings.HasPrefix(rr.Cache, "warm,") {
				continue
			}
			if batch == "" || (pv["batch"] == chartBatch && pv["fetch"] == chartFetch) {
				batch, fetchSize = pv["batch"], pv["fetch"]
			}
			rw := row{where: where, pv: pv, thr: rr.Figures[thr].Stats, cpu: summarize(nil)}
			if cpu >= 0 {
				rw.cpu = rr.Figures[cpu].Stats
			}
			rows = append(rows, rw)
		}
	}
	byLabel := map[string]*chartSeries{}
	for _, rw := range rows {
		if rw.pv["batch"] != batch || rw.pv["fetch"] != fetchSize {
			continue
		}
		rec, err := parseSize(rw.pv["record"])
		if err != nil {
			return nil, "", err
		}
		label := rw.where + " " + rw.pv["path"]
		s := byLabel[label]
		if s == nil {
			s = &chartSeries{Label: label}
			byLabel[label] = s
			series = append(series, chartSeries{Label: label})
		}
		s.Points = append(s.Points, chartPoint{Record: float64(rec), Throughput: rw.thr, CPU: rw.cpu})
	}
	if len(series) == 0 {
		return nil, "", fmt.Errorf("%w: no warm single-consumer read-paths rows to chart", ErrReport)
	}
	for i := range series {
		series[i] = *byLabel[series[i].Label]
	}
	caption = fmt.Sprintf("warm cache, 1 consumer, %s batches, %s fetches", batch, fetchSize)
	return series, caption, nil
}

// parseSize reads back what formatBytes wrote.
func parseSize(s string) (int64, error) {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("%w: size %q", ErrReport, s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: size %q", ErrReport, s)
	}
	mult := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%w: size unit %q", ErrReport, s)
	}
	return int64(v * mult), nil
}

// errPoints adapts one figure of a series to gonum's XYer and YErrorer:
// the error bar spans the runs' min to max around the median. Points
// without the figure are left out.
type errPoints []struct {
	x float64
	s summary
}

func pointsOf(s chartSeries, fig func(chartPoint) summary) errPoints {
	var out errPoints
	for _, p := range s.Points {
		if v := fig(p); !math.IsNaN(v.Median) {
			out = append(out, struct {
				x float64
				s summary
			}{p.Record, v})
		}
	}
	return out
}

func (e errPoints) Len() int                    { return len(e) }
func (e errPoints) XY(i int) (float64, float64) { return e[i].x, e[i].s.Median }
func (e errPoints) YError(i int) (float64, float64) {
	return e[i].s.Median - e[i].s.Min, e[i].s.Max - e[i].s.Median
}

// chartFont is Liberation Sans, which gonum carries and measures text
// with. The SVG names it with metric-compatible fallbacks (Arial,
// Helvetica) and a generic family, so a viewer without it still fits
// every label where gonum laid it out.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

const chartFontFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// Layout of the chart, in points: two panels side by side under a title,
// the legend in a column of its own on the right, where it can cover no
// line.
const (
	chartWidth   = 11 * vg.Inch
	chartHeight  = 5 * vg.Inch
	chartTitle   = 52 // points of title at the top
	chartPadding = 14 // points between and around the panels
)

// writeChart draws the read paths across record sizes: throughput in one
// panel, CPU per byte (what the verdict rests on) in the other.
func writeChart(path string, r *report) error {
	series, caption, err := chartData(r)
	if err != nil {
		return err
	}
	plot.DefaultFont = chartFont
	thr := newPanel("throughput (higher is better)", "MB/s", series)
	cpu := newPanel("CPU per byte (lower is better)\nin-process: the reader's; TCP: the sender's", "ns/B", series)
	thr.Y.Tick.Marker = wholeTicks{}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	// gonum spaces entries by the text's height alone; the padding keeps
	// the lines of 12-point text apart.
	legend.Padding = vg.Points(6)
	for i, s := range series {
		lt, err := addSeries(thr, i, s, func(p chartPoint) summary { return p.Throughput })
		if err != nil {
			return err
		}
		if _, err := addSeries(cpu, i, s, func(p chartPoint) summary { return p.CPU }); err != nil {
			return err
		}
		legend.Add(s.Label, lt...)
	}

	c := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	title := draw.TextStyle{Color: plotColor{}, Font: font.From(chartFont, 12), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	dc.FillText(title, vg.Point{X: chartWidth / 2, Y: chartHeight - 6}, "Folio read paths by record size: "+caption)
	title.Font = font.From(chartFont, 10)
	runs := "each point the median of its runs, bars from their min to max"
	if r.Runs <= 1 {
		runs = "each point a single run"
	}
	dc.FillText(title, vg.Point{X: chartWidth / 2, Y: chartHeight - 24}, r.Machine.CPU+", "+r.Machine.Kernel+", data on "+r.Machine.Filesystem+"; "+runs)
	// The legend's column is as wide as its longest entry, and a fifth
	// more for a fallback font wider than Liberation Sans (DejaVu Sans).
	lr := legend.Rectangle(dc)
	legendWidth := (lr.Max.X-lr.Min.X)*6/5 + chartPadding
	panels := draw.Crop(dc, 0, -legendWidth, 0, -chartTitle)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: chartPadding, PadLeft: 4, PadRight: chartPadding, PadBottom: 4, PadTop: 4}
	canvases := plot.Align([][]*plot.Plot{{thr, cpu}}, tiles, panels)
	thr.Draw(canvases[0][0])
	cpu.Draw(canvases[0][1])
	legend.Draw(draw.Crop(dc, chartWidth-legendWidth, 0, 0, -chartTitle-24))

	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	svg := strings.ReplaceAll(buf.String(), "font-family:Liberation Sans;", chartFontFamily)
	if err := os.WriteFile(path, []byte(svg), 0o644); err != nil {
		return fmt.Errorf("bench: write chart %s: %w", path, err)
	}
	return nil
}

// newPanel returns one panel: a log-scale record-size axis with a tick at
// each measured size, padded so that the outer tick labels fit.
func newPanel(title, ylabel string, series []chartSeries) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "record size (log scale)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	seen := map[float64]bool{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			lo, hi = math.Min(lo, pt.Record), math.Max(hi, pt.Record)
			if !seen[pt.Record] {
				seen[pt.Record] = true
				ticks = append(ticks, plot.Tick{Value: pt.Record, Label: formatBytes(int64(pt.Record))})
			}
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = lo/1.6, hi*1.6
	p.Y.Min = 0
	return p
}

// addSeries draws one series' figure into p and returns the thumbnails
// the legend shows for it.
func addSeries(p *plot.Plot, i int, s chartSeries, fig func(chartPoint) summary) ([]plot.Thumbnailer, error) {
	pts := pointsOf(s, fig)
	if pts.Len() == 0 {
		return nil, nil
	}
	line, scatter, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, fmt.Errorf("%w: chart %s: %v", ErrReport, s.Label, err)
	}
	line.Color = chartColor(i)
	line.Dashes = chartDashes(s.Label)
	scatter.Color = chartColor(i)
	scatter.Shape = draw.CircleGlyph{}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return nil, fmt.Errorf("%w: chart %s: %v", ErrReport, s.Label, err)
	}
	bars.Color = chartColor(i)
	p.Add(line, scatter, bars)
	for _, e := range pts {
		p.Y.Max = math.Max(p.Y.Max, e.s.Max*1.08)
	}
	return []plot.Thumbnailer{line, scatter}, nil
}

// chartColor is a palette readable in print and by most color-blind
// readers (Okabe–Ito).
func chartColor(i int) plotColor {
	pal := []plotColor{
		{0xE6, 0x9F, 0x00}, {0x56, 0xB4, 0xE9}, {0x00, 0x9E, 0x73},
		{0xD5, 0x5E, 0x00}, {0xCC, 0x79, 0xA7}, {0x00, 0x72, 0xB2}, {0x00, 0x00, 0x00},
	}
	return pal[i%len(pal)]
}

// plotColor is an opaque RGB color (image/color.Color).
type plotColor struct{ R, G, B uint8 }

func (c plotColor) RGBA() (r, g, b, a uint32) {
	return uint32(c.R) * 0x101, uint32(c.G) * 0x101, uint32(c.B) * 0x101, 0xFFFF
}

// chartDashes draws TCP paths dashed and in-process paths solid, so the two
// consumers read apart even without color.
func chartDashes(label string) []vg.Length {
	if strings.HasPrefix(label, "TCP") {
		return []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return nil
}

// wholeTicks are gonum's default ticks labelled without decimals: MB/s
// figures are not precise to a hundredth.
type wholeTicks struct{}

func (wholeTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', 0, 64)
		}
	}
	return ticks
}
