package cellspipe

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/spf13/pflag"
)

// TestCellsFlags: --cells-credits and --cells-packing set the reverse of
// NoCredits and NoPacking, --cells-pre-credit 0 is none (-1) and a
// negative one is refused.
func TestCellsFlags(t *testing.T) {
	for _, tc := range []struct {
		args                 []string
		noCredits, noPacking bool
		preCredit            int
		err                  bool
	}{
		{nil, false, false, DefaultPreCredit, false},
		{[]string{"--cells-credits=false", "--cells-packing=false", "--cells-pre-credit", "0"}, true, true, -1, false},
		{[]string{"--cells-pre-credit", "100"}, false, false, 100, false},
		{[]string{"--cells-pre-credit", "-5"}, false, false, 0, true},
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
		if err != nil || cc.NoCredits != tc.noCredits || cc.NoPacking != tc.noPacking || cc.PreCredit != tc.preCredit {
			t.Errorf("%v: NoCredits %v NoPacking %v PreCredit %d, %v; want %v %v %d", tc.args, cc.NoCredits, cc.NoPacking, cc.PreCredit, err, tc.noCredits, tc.noPacking, tc.preCredit)
		}
	}
}
