package report

import (
	"io"
	"text/tabwriter"
)

// NewTable starts a text table on w in the experiments' one style: cells
// ended by tabs, aligned right, two spaces apart. Flush ends it.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}
