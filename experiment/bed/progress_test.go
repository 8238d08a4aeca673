package bed

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestFlowProgressInALog: written to something that is not a terminal (a CI
// log, `| tee`), progress is whole lines, one every few seconds and one at
// the end, with no carriage returns or escape sequences.
func TestFlowProgressInALog(t *testing.T) {
	var b bytes.Buffer
	clock := time.Unix(1000, 0)
	p := FlowProgress(&b, "lg 24KB", func() time.Time { return clock })
	const total, seconds = 1000, 30
	for s := 0; s < seconds; s++ { // 30 s of updates, 10 per second
		for i := 0; i < 10; i++ {
			clock = clock.Add(100 * time.Millisecond)
			p(s*total/seconds+i*total/seconds/10, total)
		}
	}
	p(total, total)
	out := b.String()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("carriage returns or escapes in a log:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// One line per progressEvery (5 s) of the 30 s, plus the last.
	if len(lines) < seconds/10 || len(lines) > seconds/2+1 {
		t.Errorf("%d lines for %d s of progress; want one every few seconds:\n%s", len(lines), seconds, out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "lg 24KB") {
			t.Errorf("line %q does not name the run", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "1000/1000") {
		t.Errorf("last line %q does not show the run complete", last)
	}
}
