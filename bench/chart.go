package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartSeries is one line of the chart: a path's throughput by record size.
type chartSeries struct {
	Label  string
	Points []chartPoint
}

type chartPoint struct {
	Record        float64 // bytes
	Med, Min, Max float64 // MB/s
}

// Chart defaults: Kafka's producer batch.size and consumer
// max.partition.fetch.bytes, the sizes the chart holds fixed when the run
// measured them.
const (
	chartBatch = "16 KiB"
	chartFetch = "1 MiB"
)

// chartData picks from the read-paths tables the rows the chart compares:
// warm cache, one consumer, and one batch and fetch size (chartBatch and
// chartFetch when measured, else the first measured). Holding those fixed
// leaves record size as the only variable along the x axis.
func chartData(r *report) (series []chartSeries, caption string, err error) {
	type row struct {
		where string
		pv    map[string]string
		st    summary
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
		for _, rr := range t.Rows {
			pv := map[string]string{}
			for _, p := range rr.Params {
				pv[p.Name] = p.Value
			}
			if pv["consumers"] != "1" || !strings.HasPrefix(rr.Cache, "warm,") || len(rr.Figures) == 0 {
				continue
			}
			if batch == "" || (pv["batch"] == chartBatch && pv["fetch"] == chartFetch) {
				batch, fetchSize = pv["batch"], pv["fetch"]
			}
			// Throughput is every read table's first column.
			rows = append(rows, row{where, pv, rr.Figures[0].Stats})
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
		s.Points = append(s.Points, chartPoint{Record: float64(rec), Med: rw.st.Median, Min: rw.st.Min, Max: rw.st.Max})
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

// errPoints adapts a series to gonum's XYer and YErrorer: the error bar
// spans the runs' min to max around the median.
type errPoints []chartPoint

func (e errPoints) Len() int                    { return len(e) }
func (e errPoints) XY(i int) (float64, float64) { return e[i].Record, e[i].Med }
func (e errPoints) YError(i int) (float64, float64) {
	return e[i].Med - e[i].Min, e[i].Max - e[i].Med
}

// writeChart draws mmap versus sendfile throughput across record sizes.
func writeChart(path string, r *report) error {
	series, caption, err := chartData(r)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "Folio read paths: throughput by record size\n" + caption + "\n" + r.Machine.CPU + ", " + r.Machine.Kernel + ", " + r.Machine.Filesystem
	p.X.Label.Text = "record size (log scale)"
	p.Y.Label.Text = "MB/s (median; bars: min–max of runs)"
	p.X.Scale = plot.LogScale{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	seen := map[float64]bool{}
	ymax := 0.0
	for i, s := range series {
		pts := errPoints(s.Points)
		line, scatter, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("%w: chart %s: %v", ErrReport, s.Label, err)
		}
		line.Color = chartColor(i)
		line.Dashes = chartDashes(s.Label)
		scatter.Color = chartColor(i)
		scatter.Shape = draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return fmt.Errorf("%w: chart %s: %v", ErrReport, s.Label, err)
		}
		bars.Color = chartColor(i)
		p.Add(line, scatter, bars)
		p.Legend.Add(s.Label, line, scatter)
		for _, pt := range s.Points {
			ymax = math.Max(ymax, pt.Max)
			if !seen[pt.Record] {
				seen[pt.Record] = true
				ticks = append(ticks, plot.Tick{Value: pt.Record, Label: formatBytes(int64(pt.Record))})
			}
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	p.Y.Tick.Marker = wholeTicks{}
	if ymax > 0 {
		p.Y.Max = ymax * 1.5 // room for the legend above the lines
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("bench: write chart %s: %w", path, err)
	}
	return nil
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
