package tdmasim

import (
	"testing"
)

// Each scenario is a claim TDMA must hold: its figures must fall in
// their ranges (computed from the configuration, never fixed numbers).
func TestScenarios(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			res, err := sc.Run(1)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Figures {
				if !f.OK() {
					t.Errorf("%s = %.4g, want %s (%s)", f.Name, f.Value, f.Range(), f.Why)
				} else {
					t.Logf("%s = %.4g %s", f.Name, f.Value, f.Range())
				}
			}
		})
	}
}
