package simfab

import "testing"

func runScenario(t *testing.T, name string) *Result {
	t.Helper()
	sc, ok := Find(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	if sc.Slow && testing.Short() {
		t.Skip("slow scenario under -short")
	}
	r, err := sc.Run(1)
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

func TestPacking(t *testing.T)      { runScenario(t, "packing") }
func TestBalance(t *testing.T)      { runScenario(t, "balance") }
func TestElephants(t *testing.T)    { runScenario(t, "elephants") }
func TestIncast(t *testing.T)       { runScenario(t, "incast") }
func TestPushPull(t *testing.T)     { runScenario(t, "pushpull") }
func TestCreditLoss(t *testing.T)   { runScenario(t, "creditloss") }
func TestLinkDeath(t *testing.T)    { runScenario(t, "linkdeath") }
func TestExclusion(t *testing.T)    { runScenario(t, "exclusion") }
func TestReasmTimeout(t *testing.T) { runScenario(t, "reasm") }
func TestFCI(t *testing.T)          { runScenario(t, "fci") }
func TestCtrlLoss(t *testing.T)     { runScenario(t, "ctrlloss") }
func TestRestart(t *testing.T)      { runScenario(t, "restart") }
func TestCtrlCost(t *testing.T)     { runScenario(t, "ctrlcost") }
func TestScale(t *testing.T)        { runScenario(t, "scale") }
