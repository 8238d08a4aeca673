package fecexp

import (
	"strings"
	"testing"
)

// The table picks, among the protections meeting the target, the lowest
// p99 FCT and the lowest overhead, and compares the policy's choice.
func TestFECTableBuild(t *testing.T) {
	cfg := FECTableConfig{Loss: []float64{1e-2, 0.3}, Target: 1e-3, MeanBurst: 0, Runs: 1}
	pt := func(arm string, p, resid, over, f99 float64) FECVethPoint {
		return FECVethPoint{Arm: arm, Loss: p, Model: "bernoulli", Residual: resid, Overhead: over, FCTP99Us: f99}
	}
	res := &FECTableResult{Config: cfg, Veth: &FECVethResult{Points: []FECVethPoint{
		pt(FECArmForward, 1e-2, 1e-2, 1.01, 9000),
		pt(FECArmParity, 1e-2, 2e-3, 1.25, 800), // misses the target
		pt(FECArmReplicate, 1e-2, 0, 3.0, 700),
		pt(FECArmLG, 1e-2, 0, 1.05, 900),
		pt(FECArmForward, 0.3, 0.3, 1.01, 1e6),
		pt(FECArmReplicate, 0.3, 8e-3, 3.0, 5000),
		pt(FECArmLG, 0.3, 2e-3, 1.6, 4000),
	}}}
	res.build()
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	r := res.Rows[0]
	if r.BestFCT != FECArmReplicate || r.BestOverhead != FECArmLG || r.CodingOverhead != FECArmReplicate || r.Policy != FECArmParity || r.Agrees {
		t.Fatalf("p=1e-2: %+v", r)
	}
	r = res.Rows[1]
	if r.BestFCT != "" || r.Policy != "exclude" || !r.Agrees {
		t.Fatalf("p=0.3: %+v", r)
	}
	if res.Summary["policy_agrees"] != 1 || !strings.Contains(res.Text(), "DIFFERS") {
		t.Fatalf("%v\n%s", res.Summary, res.Text())
	}
	// Parity meeting the target with the least overhead among the
	// codings: the policy's parity agrees, though lg is cheaper still.
	res.Veth.Points[1].Residual = 1e-4
	res.Rows = nil
	res.build()
	if r := res.Rows[0]; !r.Agrees || r.CodingOverhead != FECArmParity || r.BestOverhead != FECArmLG {
		t.Fatalf("parity within the target: %+v", r)
	}
	if policyArm(1e-3, 1e-2, true) != FECArmLG || policyArm(1e-3, 1e-4, false) != FECArmForward || policyArm(1e-3, 5e-2, false) != FECArmReplicate {
		t.Fatal("policyArm")
	}
}
