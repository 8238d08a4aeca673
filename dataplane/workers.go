package dataplane

// One worker per queue (Config.Workers, linkfabric run --workers N).
//
// # Design
//
// A node with N workers runs N copies of the one worker loop (worker.go),
// each a goroutine locked to its own OS thread. Worker i owns queue i of
// every port: the AF_XDP socket of that queue, bound on worker i's own UMEM
// (its own fill and completion rings, free list and frame reference
// counts), and its own Pipeline instance. Workers share nothing on the hot
// path but atomic counters: no lock, no frame crosses from one worker to
// another. A port with more receive queues than workers gives worker i the
// queues i, i+N, i+2N, ... to receive on; every worker transmits on its own
// queue i only.
//
// Forward: worker i forwards host queue i ⇄ link queue i. A host flow stays
// on one queue (the sending host's RSS or XPS, or on veth the hash of its
// flow picking its TX queue, which is the peer's RX queue), so it is
// forwarded by one worker, in order.
//
// LinkGuardian: one instance per lane, each with its own sequence space,
// its own link session, TX buffer, reorder buffer, credit and timers. Lane
// i is queue i at both ends: what worker i sends on TX queue i arrives on
// the peer's RX queue i (on veth, veth_xmit keeps the skb's queue mapping),
// so lane i's data, ACKs, loss notifications, retransmitted copies and
// session frames all stay on queue i, and worker i of the peer is lane i's
// other end. Why not one sequence space over all queues: the receiver
// would have to merge N queues into one order, so the workers would share
// the reorder buffer and the in-order point (a lock or a hand-off per
// frame), and a loss on one queue would hold back the frames of every
// other queue behind the hole (head-of-line blocking across lanes) without
// making any flow's order safer: a flow's frames are on one lane already,
// and lane i alone delivers them in order. Separate spaces need no
// ordering argument between lanes at all, scale with the queues, and each
// lane's session restarts on its own. The cost: an idle lane still sends
// its session keepalives, and a lane's credit is its own (the link's
// buffer is split N ways).
//
// With N workers each lane has one queue per direction, so there is no
// separate priority queue per lane: the priority lane degrades to priority
// within the one queue (the path a link port with a single TX queue takes:
// PFC, loss notifications, retransmissions and session frames are placed
// ahead of data in the same ring), said once in the log. The kernel fast
// paths (forward's devmap redirect, lg's kernel receive path) stay
// single-worker: --fastpath xdp is refused with --workers > 1, and
// --fastpath auto keeps every direction on AF_XDP.
//
// # 16 queues on a real NIC
//
// On a real NIC the sender does not choose the peer's receive queue: the
// peer's RSS does, and frames of the link EtherType (0x88B5, not IP) carry
// no ports or addresses RSS hashes on, so they all land on queue 0, where
// only worker 0 would see lanes 1..15. Each lane must be steered: give lane
// i its own destination MAC (the peer's link port answers to 16 unicast
// MACs, e.g. its base MAC with the last byte + i, added with
// `ip link add ... type macvlan` or the NIC's unicast filter list) and
// steer it with an n-tuple rule on the peer, `ethtool -N DEV flow-type
// ether dst <mac_i> action <i>` (or a VLAN/PCP per lane with `flow-type
// ether vlan <i>`, where the NIC filters on VLAN). The sender then writes
// lane i's MAC as the destination of every frame of lane i. That is the
// design to build: it keeps the per-lane sequence spaces above, and the
// steering is checked at session start (a lane's HELLO must arrive on its
// own queue, or the session refuses to come up, naming the ethtool rule).
// One sequence space over 16 queues is not chosen, for the reasons above
// and because a NIC reorders freely across queues, so the receiver's
// reorder buffer would have to absorb inter-queue skew as if it were loss.
//
// The priority lane on a NIC: with 32 queues, lane i's control goes on
// queue 16+i (steered like its data, to the same worker) and the worker
// reads and kicks it first, the single-worker design per lane; with 16
// queues it is priority within the queue as here. The NIC's own TX
// scheduling (strict priority between queues) is what makes the separate
// queue worth having at high load.
//
// Sizing per lane: each lane's credit window and TX buffer are set from its
// own RX ring (RingSize), as for one worker; the UMEM is per worker and
// sized for its sockets and its lane's buffers (checkSizes), so 16 workers
// take 16 × what one takes. The reorder buffer's pause threshold is per
// lane (its drain rate is the lane's share of the host port's rate).
//
// What a flow's ordering relies on: a host flow stays on one queue of the
// host port, so on one lane. On a NIC, RSS hashes a flow to one queue and
// XPS (or the socket's cached TX queue) sends it on one; TCP only lets a
// flow change TX queue when nothing of it is in flight (ooo_okay), so a
// move cannot reorder it either. Frames of different flows on different
// lanes are not ordered against each other, which no transport needs.
//
// CPU pinning: one worker per core, pinned (taskset or cgroups cpusets on
// the process, sched_setaffinity per worker thread), with the NIC's queue
// i interrupts (and so its softirq and the copy-mode kick's TX path) on
// worker i's core: `/proc/irq/N/smp_affinity_list`. The workers here are
// not pinned (two cores, shared with the hosts and the tests).
//
// Not tested: a real NIC (steering, zero-copy, RSS, pinning), and scaling:
// the 2-core machines here show correctness with two queues and two
// workers on veth, not throughput.

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MaxWorkers bounds Config.Workers (netns.MaxQueues: a veth's most).
const MaxWorkers = 16

// checkWorkers checks Workers and what runs with several.
func (c *Config) checkWorkers() error {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		return fmt.Errorf("dataplane: --workers %d: want 1 to %d (one worker per queue)", c.Workers, MaxWorkers)
	}
	if c.Workers == 1 {
		return nil
	}
	if !c.spec().Workers {
		return fmt.Errorf("dataplane: --workers %d: mode %s runs one worker; several run modes %s (leave --workers out)", c.Workers, c.Mode, workerModes())
	}
	switch {
	case c.FastPath == FastPathXDP:
		return fmt.Errorf("dataplane: --workers %d with --fastpath xdp: the kernel fast path is single-worker; use --fastpath afxdp (or auto) with several workers, or --workers 1 for the kernel path", c.Workers)
	case c.PFC.Enabled:
		return fmt.Errorf("dataplane: --workers %d with --pfc: PFC toward the host port needs one worker (one set of class queues); leave one of them out", c.Workers)
	case len(c.Shape) > 0:
		return fmt.Errorf("dataplane: --workers %d with --port-rate: a port's rate limit needs one worker (one egress queue); leave one of them out", c.Workers)
	}
	return nil
}

// checkPortQueues checks that port p has a queue for every worker, in both
// directions.
func (c *Config) checkPortQueues(p *Port) error {
	n := c.Workers
	if n <= 1 || (p.queues >= n && p.txQueues >= n) {
		return nil
	}
	where := "this network namespace"
	ip := "ip"
	if c.Netns != "" {
		where, ip = "namespace "+c.Netns, "ip -n "+c.Netns
	}
	return fmt.Errorf("dataplane: --workers %d needs %d RX and TX queues on every port; %s port %s (%s) has %d RX and %d TX: fix: on a NIC, ethtool -L %s combined %d (or rx %d tx %d); on a testbed veth, queues: %d on its link in the topology (%s link add ... numrxqueues %d numtxqueues %d); or lower --workers",
		n, n, p.Role, p.Name, where, p.queues, p.txQueues, p.Name, n, n, n, n, ip, n, n)
}

// workerSockets is how many sockets worker i owns (its receive queues over
// every port: i, i+Workers, ...).
func (d *Dataplane) workerSockets(i int) int {
	n := 0
	for _, p := range d.all {
		for q := i; q < p.queues; q += d.cfg.Workers {
			n++
		}
	}
	return n
}

// Workers is the number of worker loops (Config.Workers).
func (d *Dataplane) Workers() int { return d.cfg.Workers }

// workerPorts are worker i's views of the ports: each a copy of the port
// with only worker i's sockets (queue i first: the one it transmits on)
// and one lane, and its own link state. The copies share the port's XDP
// program and control socket; the dataplane closes the originals.
func (d *Dataplane) workerPorts(i int) []*Port {
	n := d.cfg.Workers
	if n == 1 {
		return d.all
	}
	ports := make([]*Port, len(d.all))
	for j, p := range d.all {
		c := *p
		c.socks = nil
		for q := i; q < len(p.socks); q += n {
			c.socks = append(c.socks, p.socks[q])
		}
		c.queues, c.lanes = len(c.socks), 1
		c.downSince, c.retryAt = 0, 0
		ports[j] = &c
	}
	return ports
}

// WorkerCounters count one worker's share of the ports' traffic (the
// ports' totals, Stats.Ports, include it) and its loop.
type WorkerCounters struct {
	Ports        []WorkerPortCounters
	Loops, Polls atomic.Uint64
}

// WorkerPortCounters count what one worker received and sent on a port.
type WorkerPortCounters struct{ RX, TX DirCounters }

// WorkerSnapshot is a point-in-time copy of WorkerCounters: worker i owns
// queue i of every port.
type WorkerSnapshot struct {
	Worker int                  `json:"worker"`
	Ports  []WorkerPortSnapshot `json:"ports"`
	Loops  uint64               `json:"loops"`
	Polls  uint64               `json:"polls"`
}

// WorkerPortSnapshot is one port's part of a WorkerSnapshot.
type WorkerPortSnapshot struct {
	Name string      `json:"name"`
	RX   DirSnapshot `json:"rx"`
	TX   DirSnapshot `json:"tx"`
}

// workerSnapshots are the workers' counters (nil with one worker: the
// ports' totals are its).
func (d *Dataplane) workerSnapshots() []WorkerSnapshot {
	if d.cfg.Workers <= 1 {
		return nil
	}
	out := make([]WorkerSnapshot, len(d.stats.Workers))
	for i := range d.stats.Workers {
		c := &d.stats.Workers[i]
		s := WorkerSnapshot{Worker: i, Loops: c.Loops.Load(), Polls: c.Polls.Load()}
		for p := range c.Ports {
			s.Ports = append(s.Ports, WorkerPortSnapshot{Name: d.stats.Ports[p].Name,
				RX: c.Ports[p].RX.snapshot(), TX: c.Ports[p].TX.snapshot()})
		}
		out[i] = s
	}
	return out
}

// runWorkers runs Config.Workers workers until ctx is cancelled or one
// fails (then the others stop, and the first error is returned). Each
// runs on its own goroutine locked to its OS thread, with the timer slack
// and nice value Run gives the one worker.
func (d *Dataplane) runWorkers(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := make([]*Worker, d.cfg.Workers)
	pipes := make([]Pipeline, d.cfg.Workers)
	epoch := time.Now() // one clock zero: the ports' down times compare
	for i := range workers {
		workers[i] = newWorker(d, i)
		workers[i].epoch = epoch
		p, err := d.inst.Pipeline(workers[i])
		if err != nil {
			return err
		}
		pipes[i] = p
	}
	d.cfg.Logger.Info("workers: one per queue, each with its own UMEM and pipeline; no priority queue per lane: link control goes ahead of data within each lane's queue",
		"workers", d.cfg.Workers, "mode", d.cfg.Mode, "fastpath", "afxdp")
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
			if n := d.cfg.Nice; n != 0 {
				unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n) // Run warned already if it cannot
			}
			if err := workers[i].run(ctx, pipes[i]); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("worker %d: %w", i, err)
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return first
}
