package results

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable makes the package's plain ASCII table: headers as given, cells
// right-aligned so that numbers line up.
func newTable(w io.Writer) *tablewriter.Table { return newTableAs(w, false) }

// newTableAs is newTable, or with markdown a GitHub-flavoured Markdown table (for a report or a README).
func newTableAs(w io.Writer, markdown bool) *tablewriter.Table {
	var r tw.Renderer = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	if markdown {
		r = renderer.NewMarkdown()
	}
	return tablewriter.NewTable(w,
		tablewriter.WithConfig(tablewriter.Config{
			Row: tw.CellConfig{Alignment: tw.CellAlignment{Global: tw.AlignRight}},
		}),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRenderer(r),
	)
}
