package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Failed is how many checks failed.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

// WriteText writes the report a line a check, ✔ passed, ! passed with a
// warning, ✗ failed, each ✗ and ! followed by its fix.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "linkfabric check: mode %s", r.Mode)
	if r.Netns != "" {
		fmt.Fprintf(&b, ", namespace %s", r.Netns)
	}
	if r.Integrity != "" {
		fmt.Fprintf(&b, ", --integrity %s", r.Integrity)
	}
	b.WriteString("\n")
	for _, c := range r.Checks {
		what := "node"
		if c.Port != "" {
			what = c.Port + " (" + c.Role + ")"
		}
		fmt.Fprintf(&b, "%s %-14s %-13s %s\n", c.Status.Mark(), what, c.Item, c.Detail)
		if c.Fix != "" && c.Status != OK {
			fmt.Fprintf(&b, "  %-28s fix: %s\n", "", c.Fix)
		}
	}
	if r.OK {
		b.WriteString("the node can run as configured\n")
	} else {
		fmt.Fprintf(&b, "the node cannot run as configured: %d check(s) failed\n", r.Failed())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
