package cellspipe

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestCellsCloseLogs: a cell node logs its counters when it closes after
// it ran, one per link and the node's; one that never made a pipeline (New
// failed after it) logs nothing.
func TestCellsCloseLogs(t *testing.T) {
	m := newMemNode(t, 1, 1, 2, Config{})
	in := m.w.Node().Instance().(*cellsInstance)
	var buf bytes.Buffer
	in.log = slog.New(slog.NewTextHandler(&buf, nil))
	in.Close()
	if buf.Len() != 0 {
		t.Errorf("a node that never ran logged:\n%s", buf.String())
	}
	if _, err := in.Pipeline(m.w); err != nil {
		t.Fatal(err)
	}
	in.Close()
	out := buf.String()
	if n := strings.Count(out, `msg="cells link"`); n != 2 || !strings.Contains(out, "msg=cells delivered=") {
		t.Errorf("want two link lines and the node's at exit, got:\n%s", out)
	}
}
