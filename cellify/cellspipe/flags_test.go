package cellspipe

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/spf13/pflag"
)

// TestCellsFlags: --cells-credits and --cells-packing set the reverse of
// NoCredits and NoPacking, --cells-pre-credit 0 and --cells-credit-ahead 0
// are none (-1) and negative ones are refused.
func TestCellsFlags(t *testing.T) {
	for _, tc := range []struct {
		args                 []string
		noCredits, noPacking bool
		preCredit, ahead     int
		err                  bool
	}{
		{nil, false, false, DefaultPreCredit, DefaultCreditAhead, false},
		{[]string{"--cells-credits=false", "--cells-packing=false", "--cells-pre-credit", "0"}, true, true, -1, DefaultCreditAhead, false},
		{[]string{"--cells-pre-credit", "100", "--cells-credit-ahead", "0"}, false, false, 100, -1, false},
		{[]string{"--cells-credit-ahead", "8192"}, false, false, DefaultPreCredit, 8192, false},
		{[]string{"--cells-pre-credit", "-5"}, false, false, 0, 0, true},
		{[]string{"--cells-credit-ahead", "-5"}, false, false, 0, 0, true},
	} {
		var cfg dataplane.Config
		f := pflag.NewFlagSet("run", pflag.ContinueOnError)
		declareFlags(f, &cfg)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := checkFlags(f, &cfg)
		if tc.err {
			if err == nil {
				t.Errorf("%v: no error", tc.args)
			}
			continue
		}
		cc := ConfigOf(&cfg)
		if err != nil || cc.NoCredits != tc.noCredits || cc.NoPacking != tc.noPacking || cc.PreCredit != tc.preCredit || cc.CreditAhead != tc.ahead {
			t.Errorf("%v: NoCredits %v NoPacking %v PreCredit %d CreditAhead %d, %v; want %v %v %d %d", tc.args, cc.NoCredits, cc.NoPacking, cc.PreCredit, cc.CreditAhead, err, tc.noCredits, tc.noPacking, tc.preCredit, tc.ahead)
		}
	}
}
