package dataplane

import (
	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/seqhdr"
)

// LinkGuardian's catch-up queue (--lg-rx-queue): the link port's XDP
// program keeps in-order frames in the kernel while the worker finishes
// the ones it was given, and the worker delivers them in the kernel
// (linkguardian/catchup.go for the protocol; bpf/lgrxqueue.go for the
// program's side). This file connects linkguardian.CatchUp to the
// program's queue and to the worker's view of its sockets.

// kernelQueue is the link port program's catch-up queue as
// linkguardian.KernelQueue.
type kernelQueue struct {
	rx    *bpf.LGRx
	drain *bpf.LGDrainer
}

func (k kernelQueue) QStart() seqhdr.Seq       { return seqhdr.Seq(k.rx.QStart()) }
func (k kernelQueue) QHead() seqhdr.Seq        { return seqhdr.Seq(k.rx.QHead()) }
func (k kernelQueue) QToGo() uint64            { return k.rx.QToGo() }
func (k kernelQueue) Drain(n int) (int, error) { return k.drain.Drain(n) }
func (k kernelQueue) SkipTo(q seqhdr.Seq)      { k.rx.SetQHead(uint64(q)) }

// CatchUpStats are the catch-up queue's counters: the worker's and, in
// Kernel, the program's.
type CatchUpStats struct {
	linkguardian.CatchUpStats
	Kernel bpf.LGRxQueueCounters `json:"kernel"`
}

// catchUpEnv is the worker's side for linkguardian.CatchUp.Step.
func (pl *lgPipeline) catchUpEnv(now int64) linkguardian.CatchUpEnv {
	held, _ := pl.gate.holding()
	accept := pl.sess.AcceptLink(now)
	env := linkguardian.CatchUpEnv{
		Live:          pl.fast.lgLive.Load() && accept,
		Reset:         !accept,
		Wait:          held,
		DeliveriesOut: pl.deliveriesOut(),
		RxWaiting:     pl.linkRxWaiting(),
	}
	if socks := pl.w.ports[portLink].socks; pl.catch.Active() && len(socks) > 0 {
		env.TakenIn = pl.linkTaken.count(now, socks[laneData], pl.fast.lgRx.QToGo())
	}
	return env
}
