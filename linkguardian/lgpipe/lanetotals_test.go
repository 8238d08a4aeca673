package lgpipe

import (
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
)

// TestLaneTotals: the lanes' core counters add up field by field; timers
// stay lane 0's.
func TestLaneTotals(t *testing.T) {
	in := &lgInstance{}
	if c := laneTotals(in.lanes); c.Sender != nil || c.Receiver != nil {
		t.Errorf("no lanes: %+v", c)
	}
	for i := range 2 {
		s := &Stats{}
		s.core = Core{
			Sender:         &linkguardian.SenderStats{DataSent: uint64(10 + i), RetxCopies: 3, TxBufPeakFrames: 7},
			Receiver:       &linkguardian.ReceiverStats{Delivered: uint64(100 * (i + 1)), Recovered: 5, FastDelivered: 1},
			Port:           linkguardian.PortStats{Resets: 1},
			AckNoTimeout:   int64(1000 * (i + 1)),
			PriorityFrames: 2,
		}
		s.core.ClassFrames[3] = uint64(i + 1)
		in.lanes = append(in.lanes, s)
	}
	c := laneTotals(in.lanes)
	if c.Sender.DataSent != 21 || c.Sender.RetxCopies != 6 || c.Sender.TxBufPeakFrames != 14 ||
		c.Receiver.Delivered != 300 || c.Receiver.Recovered != 10 || c.Receiver.FastDelivered != 2 ||
		c.Port.Resets != 2 || c.PriorityFrames != 4 || c.ClassFrames[3] != 3 || c.AckNoTimeout != 1000 {
		t.Errorf("totals %+v sender %+v receiver %+v", c, *c.Sender, *c.Receiver)
	}
	if in.lanes[0].Core().Sender.DataSent != 10 {
		t.Error("LaneTotals changed lane 0's own counters")
	}
}
