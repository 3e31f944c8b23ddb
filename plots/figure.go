package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A figure of one panel is 10 x 6.25 inches, 1600 x 1000 pixels as PNG; several panels are laid out as a grid
// of tiles of that size, at most panelCols wide.
const (
	figWidth  = 10 * vg.Inch
	figHeight = 6.25 * vg.Inch
	imageDPI  = 160
	panelCols = 2
	// The size axis labels every size up to maxSizeLabels of them; beyond uprightAfter they stand upright.
	maxSizeLabels = 40
	uprightAfter  = 10
)

// Liberation Sans has the metrics of Arial and Helvetica, so an SVG viewer
// that lacks it lays out the same text in the same space with the fallbacks
// svgFamilies names.
const svgFamilies = `font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// okabeIto is the colour-blind-safe palette of Okabe and Ito (2008), yellow last: it is the hardest to see
// on white.
var okabeIto = []color.Color{
	color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}, // blue
	color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff}, // vermilion
	color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff}, // bluish green
	color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff}, // orange
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff}, // reddish purple
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff}, // sky blue
	color.RGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black
	color.RGBA{R: 0xF0, G: 0xE4, B: 0x42, A: 0xff}, // yellow
}

// lineStyle is how the i-th line of a panel is drawn: a colour of the palette, a marker shape of its own, and
// dashes once the colours come round again.
type lineStyle struct {
	color  color.Color
	shape  draw.GlyphDrawer
	dashes []vg.Length
}

func styleOf(i int) lineStyle {
	return lineStyle{okabeIto[i%len(okabeIto)], plotutil.Shape(i), plotutil.Dashes(i / len(okabeIto))}
}

func (s lineStyle) apply(line *plotter.Line, points *plotter.Scatter) {
	line.Color, line.Width, line.Dashes = s.color, vg.Points(1.5), s.dashes
	points.Color, points.Shape, points.Radius = s.color, s.shape, vg.Points(3)
}

// figure is what one plot command draws: title lines over one panel or a grid of panels, each with its legend
// to the right of its data.
type figure struct {
	title  []string
	panels []panel
}

// panel is a plot with its legend and axis labels, which the figure draws itself: the legend outside the
// data, and the labels where gonum/plot's layout, which places them at the linear middle of a log axis, leaves
// no room out of proportion.
type panel struct {
	plot           *plot.Plot
	legend         plot.Legend
	xLabel, yLabel string
}

func (f *figure) add(p *plot.Plot) {
	pn := panel{plot: p, legend: p.Legend, xLabel: p.X.Label.Text, yLabel: p.Y.Label.Text}
	pn.legend.TextStyle.Font.Size = 11
	pn.legend.ThumbnailWidth = vg.Points(28)
	pn.legend.Padding = vg.Points(4)
	pn.legend.Top, pn.legend.Left = true, true
	p.Legend = plot.NewLegend()
	p.X.Label.Text, p.Y.Label.Text = "", ""
	f.panels = append(f.panels, pn)
}

// draw lays the figure out on c.
func (f *figure) draw(c draw.Canvas) {
	pad := vg.Points(8)
	top := c.Max.Y - pad
	for i, line := range f.title {
		if line == "" {
			continue
		}
		sty := textStyle(15)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		if i > 0 {
			sty.Font.Size = 12
		}
		c.FillText(sty, vg.Point{X: c.Center().X, Y: top}, line)
		top -= sty.Height(line) + vg.Points(3)
	}
	body := draw.Crop(c, 0, 0, 0, top-c.Max.Y)
	label := textStyle(12)
	for i, at := range f.layout(body) {
		pn := f.panels[i]
		pn.plot.Draw(at.area)
		data := pn.plot.DataCanvas(at.area)
		x := label
		x.XAlign, x.YAlign = draw.XCenter, draw.YBottom
		at.tile.FillText(x, vg.Point{X: data.Center().X, Y: at.tile.Min.Y}, pn.xLabel)
		y := label
		y.Rotation, y.XAlign, y.YAlign = math.Pi/2, draw.XCenter, draw.YTop
		at.tile.FillText(y, vg.Point{X: at.tile.Min.X, Y: data.Center().Y}, pn.yLabel)
		pn.legend.Draw(at.legend)
	}
}

// placement is where a panel goes: its tile, within it the plot's area (axes and data), and right of that its
// legend, from the top of the data down.
type placement struct{ tile, area, legend draw.Canvas }

// layout places the panels on body: a grid of tiles, in each room for the axis labels and the plot, and the
// legend beside it, as wide in every tile so that the axes line up.
func (f *figure) layout(body draw.Canvas) []placement {
	pad := vg.Points(8)
	var legendW vg.Length
	for _, pn := range f.panels {
		legendW = max(legendW, pn.legend.Rectangle(body).Size().X+2*pad) // room for a wider fallback font in SVG
	}
	cols := min(len(f.panels), panelCols)
	rows := (len(f.panels) + cols - 1) / cols
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad,
		PadX: 3 * pad, PadY: 2 * pad}
	labelH := textStyle(12).Height("Ag")
	out := make([]placement, len(f.panels))
	for i, pn := range f.panels {
		tile := tiles.At(body, i%cols, i/cols)
		area := draw.Crop(tile, labelH+pad, -(legendW + 2*pad), labelH+pad, 0)
		data := pn.plot.DataCanvas(area)
		out[i] = placement{tile: tile, area: area, legend: draw.Canvas{Canvas: tile.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: area.Max.X + 2*pad, Y: tile.Min.Y}, Max: vg.Point{X: tile.Max.X, Y: data.Max.Y}}}}
	}
	return out
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// size is the figure's size: a tile per panel.
func (f *figure) size() (vg.Length, vg.Length) {
	cols := min(len(f.panels), panelCols)
	rows := (len(f.panels) + cols - 1) / cols
	return vg.Length(cols) * figWidth, vg.Length(rows) * figHeight
}

// render draws the figure in the format of ext (png, svg, pdf, jpg, tif). SVG text names fallback fonts
// (svgFamilies) so that it renders the same where Liberation is not installed.
func (f *figure) render(ext string) ([]byte, error) {
	for _, pn := range f.panels {
		p := pn.plot
		// A log axis over a single value would be widened by 1 either side, down to 0 or below: widen it by a
		// factor of 2 instead.
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			if _, log := ax.Scale.(plot.LogScale); log && ax.Min == ax.Max && ax.Min > 0 {
				ax.Min, ax.Max = ax.Min/2, ax.Max*2
			}
		}
	}
	c := formats[ext](f.size())
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if ext == "svg" {
		data = bytes.ReplaceAll(data, []byte("font-family:Liberation Sans;"), []byte(svgFamilies))
	}
	return data, nil
}

// formats are the output formats by file extension.
var formats = map[string]func(w, h vg.Length) vg.CanvasWriterTo{
	"png":  func(w, h vg.Length) vg.CanvasWriterTo { return vgimg.PngCanvas{Canvas: newImage(w, h)} },
	"jpg":  func(w, h vg.Length) vg.CanvasWriterTo { return vgimg.JpegCanvas{Canvas: newImage(w, h)} },
	"tif":  func(w, h vg.Length) vg.CanvasWriterTo { return vgimg.TiffCanvas{Canvas: newImage(w, h)} },
	"svg":  func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) },
	"pdf":  func(w, h vg.Length) vg.CanvasWriterTo { return vgpdf.New(w, h) },
	"jpeg": func(w, h vg.Length) vg.CanvasWriterTo { return vgimg.JpegCanvas{Canvas: newImage(w, h)} },
	"tiff": func(w, h vg.Length) vg.CanvasWriterTo { return vgimg.TiffCanvas{Canvas: newImage(w, h)} },
}

func newImage(w, h vg.Length) *vgimg.Canvas {
	return vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(imageDPI))
}

// formatOf is the format of an output file, from its extension.
func formatOf(path string) (string, error) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if formats[ext] == nil {
		return "", fmt.Errorf("-o %s: want a file ending in .png, .svg or .pdf (.jpg and .tif work too)", path)
	}
	return ext, nil
}

// valueTicks labels round values of a logarithmic value axis: 1, 2 and 5 of each decade over a narrow
// range, decades over a wide one.
func valueTicks(min, max float64) []plot.Tick {
	return logTicks(min, max, false)
}

// ratioTicks labels the round ratios in [min, max], 1 always among them.
func ratioTicks(min, max float64) []plot.Tick {
	return logTicks(min, max, true)
}

func logTicks(min, max float64, withOne bool) []plot.Tick {
	var ticks []plot.Tick
	min, max = math.Max(min, 1e-12), math.Max(max, 1e-12)
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	// Over many decades (an interval from two rounds can span twenty) about eight are labelled.
	every := math.Max(1, math.Ceil((hi-lo)/8))
	decades := math.Log10(max / min)
	labelled := []float64{1, 1.25, 1.5, 2, 3, 5}
	steps := labelled
	switch {
	case every > 1:
		labelled, steps = labelled[:1], labelled[:1]
	case decades > 2: // decades labelled, the rest marked
		labelled, steps = labelled[:1], []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	case decades > 1:
		labelled = []float64{1, 2, 3, 5}
		steps = labelled
	}
	for e := lo; e <= hi; e++ {
		decade := math.Pow(10, e)
		for _, m := range steps {
			v := decade * m
			if (v < min || v > max) && !(withOne && v == 1) {
				continue
			}
			t := plot.Tick{Value: v}
			if withOne && v == 1 || slices.Contains(labelled, m) && (m != 1 || math.Mod(e-lo, every) == 0) {
				t.Label = tickLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// tickLabel writes v to 3 significant digits without an exponent: 0.001, 1.25, 2000.
func tickLabel(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}
