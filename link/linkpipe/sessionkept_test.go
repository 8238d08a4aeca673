package linkpipe

import "testing"

// TestKeptSince: a link session down since 0 keeps, at 800, the frames
// that arrived in the second half of the outage, from 400 on.
func TestKeptSince(t *testing.T) {
	if since := keptSince(0, 800); since != 400 {
		t.Fatalf("keptSince(0, 800) = %d, want 400", since)
	}
}
