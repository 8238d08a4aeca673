package tdmaexp

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
)

// TestPrintCauses: the cause tables name each run's collisions and the
// frames the exit gate stopped by cause, the worst sampled ones with their
// host, slot and lateness, and the stopped frames per sender.
func TestPrintCauses(t *testing.T) {
	var quiet, busy TDMACounters
	busy.Causes[gate.SwitchQueue].Add(1514, 42)
	busy.Causes[gate.SwitchQueue].Met = 1
	busy.MetInSlot = 3
	busy.CollSample = []gate.Collision{{Src: 0, Dst: 2, Round: 7, Slot: 1, Cause: gate.SwitchQueue, LateUs: 42}}
	busy.Stopped[gate.KernelQueue].Add(1514, 300)
	busy.Stopped[gate.KernelQueue].Add(1514, 100)
	busy.Stopped[gate.ClosedLate].Add(1514, 0)
	busy.StoppedBy = []uint64{0, 2, 1}
	busy.StopSample = []gate.Collision{{Src: 1, Dst: 3, Round: 9, Slot: 2, Cause: gate.KernelQueue, LateUs: 300}}
	var b strings.Builder
	printCauses(&b, []causeRun{runCauses("tdma 1", &quiet), runCauses("tdma 2", &busy)})
	out := b.String()
	for _, want := range []string{
		"collisions by cause", "1 (42/42) met 1", "tdma 2: 3 meetings of two frames both inside their slots", "tdma 2: h1 → h3, 7/1: switch_queue 42 µs late",
		"frames the gates stopped, by cause", "2 (200/300)", "tdma 2: h2 → h4, 9/2: kernel_queue 300 µs late",
		"tdma 2 stopped by sender: h1 0 h2 2 h3 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	b.Reset()
	printCauses(&b, []causeRun{runCauses("tdma 1", &quiet)})
	if out := b.String(); strings.Count(out, "none in any run") != 1 || strings.Contains(out, "stopped") {
		t.Errorf("a run without collisions nor a gate:\n%s", out)
	}
}
