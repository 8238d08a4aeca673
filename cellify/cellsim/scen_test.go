package cellsim

import (
	"fmt"
	"os"
	"testing"

	"github.com/linkfabric/linkfabric/internal/scenario"
)

func runScenario(t *testing.T, name string) *scenario.Result {
	t.Helper()
	sc, ok := Find(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	if sc.Slow && testing.Short() {
		t.Skip("slow scenario under -short")
	}
	r, err := sc.Run(1)
	return checkFigures(t, name, r, err)
}

// checkFigures fails the test for every figure of r out of its range.
func checkFigures(t *testing.T, name string, r *scenario.Result, err error) *scenario.Result {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Figures {
		mark := "ok"
		if !f.OK() {
			mark = "FAIL"
			t.Errorf("%s: %s = %.4g, want %s (%s)", name, f.Name, f.Value, f.Range(), f.Why)
		}
		t.Logf("%-4s %-28s %12.4g  %s", mark, f.Name, f.Value, f.Range())
	}
	t.Logf("%s: %.1f ms simulated, %d events, %v wall", name, float64(r.SimNs)/1e6, r.Events, r.Wall)
	return r
}

func TestPacking(t *testing.T)       { runScenario(t, "packing") }
func TestBalance(t *testing.T)       { runScenario(t, "balance") }
func TestElephants(t *testing.T)     { runScenario(t, "elephants") }
func TestIncast(t *testing.T)        { runScenario(t, "incast") }
func TestPushPull(t *testing.T)      { runScenario(t, "pushpull") }
func TestLoopJump(t *testing.T)      { runScenario(t, "loopjump") }
func TestHeldCells(t *testing.T)     { runScenario(t, "heldcells") }
func TestLossyLinks(t *testing.T)    { runScenario(t, "lossylinks") }
func TestStalledSource(t *testing.T) { runScenario(t, "stalledsource") }
func TestStalls(t *testing.T)        { runScenario(t, "stalls") }
func TestUDPStalls(t *testing.T)     { runScenario(t, "udpstalls") }
func TestLinkDeath(t *testing.T)     { runScenario(t, "linkdeath") }
func TestExclusion(t *testing.T)     { runScenario(t, "exclusion") }
func TestReasmTimeout(t *testing.T)  { runScenario(t, "reasm") }
func TestFCI(t *testing.T)           { runScenario(t, "fci") }
func TestCtrlLoss(t *testing.T)      { runScenario(t, "ctrlloss") }
func TestRestart(t *testing.T)       { runScenario(t, "restart") }
func TestCtrlCost(t *testing.T)      { runScenario(t, "ctrlcost") }

// TestCreditLoss runs seeds 1-12: with a tenth of the requests and grants
// lost, a lost grant's credit held the window until a repeat that had
// backed off to RefreshMax, and 4 of these 12 seeds idled the port for
// milliseconds with every source backlogged (throughput 0.78-0.81 of the
// loss-free run's) before the scheduler re-sent a late VOQ's grant total.
func TestCreditLoss(t *testing.T) {
	sc, _ := Find("creditloss")
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r, err := sc.Run(seed)
			checkFigures(t, "creditloss", r, err)
		})
	}
}

// TestScale runs the scale scenario: the design's 64 edges, or under -short
// (make test) unless LINKFABRIC_FULL is set (make soak) 8 edges × 4
// uplinks in two pods under 4 spines, whose figures fall in the same
// ranges in a second of wall time.
func TestScale(t *testing.T) {
	if testing.Short() && os.Getenv("LINKFABRIC_FULL") == "" {
		small := DefaultScale()
		small.Edges, small.Uplinks, small.PodEdges, small.Spines, small.Measure = 8, 4, 4, 4, ms
		r, err := ScaleWith(1, small)
		checkFigures(t, "scale (8 edges)", r, err)
		return
	}
	runScenario(t, "scale")
}
