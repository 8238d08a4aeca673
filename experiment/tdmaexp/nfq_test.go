package tdmaexp

import "testing"

func TestNFQRunMet(t *testing.T) {
	for _, c := range []struct {
		r    NFQRun
		want bool
	}{
		{NFQRun{Bps: 70e6}, true},
		{NFQRun{Retransmits: 1}, false},
		{NFQRun{RetransSegs: 2}, false},
		{NFQRun{QueueDropped: 1}, false},
		{NFQRun{UserDropped: 1}, false},
	} {
		if got := c.r.met(); got != c.want {
			t.Errorf("%+v: met %v, want %v", c.r, got, c.want)
		}
	}
}
