package lgpipe

import (
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/spf13/pflag"
)

func init() {
	dataplane.RegisterFlags("lg", dataplane.Flags{Declare: declareFlags})
}

// declareFlags declares LinkGuardian's flags (--lg-*) into f, filling c's
// Config (and, for --lg-protect, its link session's configuration).
func declareFlags(f *pflag.FlagSet, c *dataplane.Config) {
	lgc := ConfigOf(c)
	f.BoolVar(&lgc.Auto, "lg-auto", false, "lg/lgnb/monitor: the measured loss rate switches the receiving direction between monitor, lg and lgnb (policy in docs/run.md)")
	f.StringVar(&linkpipe.SessionConfigOf(c).Protect, "lg-protect", "both", "lg/lgnb: directions this end protects: both, tx, rx")
	f.Float64Var(&lgc.TargetLoss, "lg-target-loss", 1e-8, "lg/lgnb: effective loss rate to reach; N copies per loss follow Equation 2")
	f.Float64Var(&lgc.LinkLoss, "lg-link-loss", 0, "lg/lgnb: the link's loss rate for Equation 2 (default: measured from loss notifications)")
	f.IntVar(&lgc.Copies, "lg-copies", 0, "lg/lgnb: force N retransmitted copies per lost frame")
	f.IntVar(&lgc.MaxCopies, "lg-max-copies", 4, "lg/lgnb: cap on a measured N")
	f.DurationVar(&lgc.AckTimeout, "lg-ack-timeout", 0, "lg: ackNoTimeout (default: from the measured retransmission delay, Appendix B.1)")
	f.DurationVar(&lgc.AckDelay, "lg-ack-delay", 0, "lg/lgnb: longest wait for reverse data to carry an ACK before an explicit one (default: the measured p99 retransmission delay)")
	f.DurationVar(&lgc.DummyInterval, "lg-dummy-interval", 0, "lg/lgnb: least idle time after the last data frame before a dummy exposes a tail loss (default 10µs; later dummies back off)")
	f.DurationVar(&lgc.DummyWaitMax, "lg-dummy-wait-max", 0, "lg/lgnb: most idle time after the last data frame before a dummy exposes a tail loss (default 500µs)")
	f.IntVar(&lgc.DummyCopies, "lg-dummy-copies", 0, "lg/lgnb: dummies per emission; more than 1 when bursty loss can take the dummy with the tail (default 1)")
	f.IntVar(&lgc.PauseThreshold, "lg-pause-threshold", 0, "lg: reorder-buffer bytes that send a PFC pause (default resume + 2 MTU)")
	f.IntVar(&lgc.ResumeThreshold, "lg-resume-threshold", 0, "lg: reorder-buffer bytes that send a PFC resume (default: measured p99 retransmission delay × peak delivery rate)")
	f.IntVar(&lgc.TxBuffer, "lg-tx-buffer", 0, "lg/lgnb: TX buffer and reorder window in frames, a power of two (default: from --ring-size)")
	f.IntVar(&lgc.PFCClass, "lg-pfc-class", 0, "lg: an 802.1Qbb frame from the link pausing this priority also pauses LinkGuardian's sender")
}
