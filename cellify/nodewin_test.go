package cellify

import "testing"

// The credit window holds what the destination's host port must queue:
// with the port stopped (nothing leaves it), the frames delivered to it
// never exceed the window however the grants and the cells interleave.
// The port's queue is reported only before each step, as a dataplane
// reports it at its Poll, while requests and cells that arrive between two
// reports run the scheduler: the frames delivered since the last report
// count in its queue.
func TestNodeWindowBoundsStoppedPort(t *testing.T) {
	const credit, window = 4 << 10, 16 << 10
	n := newBundle(t, 2, func(c *NodeConfig) {
		c.Sched.CreditSize, c.Sched.MaxInFlight, c.Sched.StopAbove = credit, window, window
		c.Sched.MaxBurst = 1
		c.Client.Quantum = 0 // every frame is announced: requests come between the cells
	})
	e2 := n.nodes[1]
	dst := [2]int{1, 0}
	queued := func() int {
		q := 0
		for _, b := range n.got[dst] {
			q += len(b)
		}
		return q
	}
	for i := range 4000 {
		e2.SetEgressQueue(n.now, 0, queued())
		n.host(0, 0, hostFrame(1, 2, 0, i, 1000))
		n.step(nodeUs / 4)
		if q := queued(); q > window {
			t.Fatalf("step %d: %d bytes delivered to a stopped port, window %d (%d frames; scheduler %+v)",
				i, q, window, len(n.got[dst]), e2.Scheduler(0).Loop())
		}
	}
	if q := queued(); q < window/2 {
		t.Fatalf("%d bytes delivered to the stopped port: the window (%d) was not used", q, window)
	}
}
