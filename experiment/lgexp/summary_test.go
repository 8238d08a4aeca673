package lgexp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/fct"
)

// TestResultsJSONSummary: the chaos, fct, goodput and stress results give
// their figures in a JSON "summary" object, as every experiment's result
// does, with what their tables read.
func TestResultsJSONSummary(t *testing.T) {
	ptr := func(v float64) *float64 { return &v }
	var flows []fct.Flow
	for arm, us := range map[string]int{"noloss": 100, "loss": 900, "lg": 150} {
		flows = append(flows, fct.Flow{Arm: arm, Size: 143, FCT: time.Duration(us) * time.Microsecond})
	}
	chaos := &ChaosResult{Config: ChaosConfig{Events: []string{"kill-sw1", "flap-sw1"}}, Events: []*ChaosEvent{
		{Event: "kill-sw1", Alive: true, ResumeMs: [2]float64{40, 60}, UDP: UDPCheck{Packets: 10}},
		{Event: "flap-sw1", Alive: true, ResumeMs: [2]float64{30, -1}, UDP: UDPCheck{Packets: 10}},
	}}
	fctRes := &FCTResult{Config: FCTConfig{Sizes: []int64{143}}, FCT: fct.NewResults(flows, "noloss")}
	goodput := &GoodputResult{Table: fct.GoodputTable{LossRates: []float64{0, 1e-3}, Rows: []fct.GoodputRow{
		{Arm: "lg", Bps: []*float64{ptr(2e9), ptr(1.5e9)}, Ratio: []*float64{ptr(1), ptr(0.75)}},
		{Arm: "none", Bps: []*float64{nil, ptr(0.5e9)}, Ratio: []*float64{nil, ptr(0.25)}},
	}}}
	stress := &StressResult{Arms: []*StressArm{{Name: "forward", EffectiveSpeed: 1}, {Name: "lg", EffectiveSpeed: 0.5, Missing: 2}}}
	for _, c := range []struct {
		name      string
		summarize func()
		res       any
		want      map[string]any
		absent    []string
	}{
		{"chaos", chaos.summarize, chaos, map[string]any{
			"kill-sw1_alive": true, "kill-sw1_resume_ms": 60.0, "kill-sw1_udp_ok": true, "flap-sw1_resume_ms": -1.0,
			"failed": []any{"flap-sw1"}, "pass": false}, nil},
		{"fct", fctRes.summarize, fctRes, map[string]any{
			"143B_p99.9_lg_over_noloss": 1.5, "143B_p99.9_loss_over_lg": 6.0, "143B_p99.9_loss_over_noloss": 9.0},
			[]string{"143B_p99.9_lgnb_over_noloss"}},
		{"goodput", goodput.summarize, goodput, map[string]any{
			"lg_bps_at_0": 2e9, "lg_ratio_at_0.001": 0.75, "none_bps_at_0.001": 0.5e9}, []string{"none_bps_at_0"}},
		{"stress", stress.summarize, stress, map[string]any{
			"forward_link_speed": 1.0, "lg_link_speed": 0.5, "lg_missing": 2.0, "lg_out_of_order": 0.0}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.summarize()
			summary := bedtest.Summary(t, c.res)
			for k, v := range c.want {
				got, _ := json.Marshal(summary[k])
				want, _ := json.Marshal(v)
				if string(got) != string(want) {
					t.Errorf("summary %s: %s, want %s (%v)", k, got, want, summary)
				}
			}
			for _, k := range c.absent {
				if v, ok := summary[k]; ok {
					t.Errorf("summary %s: %v, want none", k, v)
				}
			}
		})
	}
}
