package cellsim

import (
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/cellify"
)

// Restart takes node n down now, like a process that stops: frames that
// reach it are lost (counted in n.Lost), it sends nothing, its links stay
// up. After down ns it starts again with fresh state: a new cellify.Node
// from its configuration, with a new random source and so a new epoch,
// adjusted by mod if given (e.g. its first cell seq). Frames in flight on
// its links or queued at its hosts are kept.
func (s *Sim) Restart(n *Node, down int64, mod func(c *cellify.NodeConfig)) {
	n.dead = true
	n.wake = -1 // no pending wake-up runs
	s.At(s.Now+max(down, 0), func() {
		n.boots++
		n.cfg.Rng = rand.New(rand.NewPCG(s.cfg.Seed, uint64(n.idx)+1+n.boots<<32))
		n.cfg.Epoch = 0
		if mod != nil {
			mod(&n.cfg)
		}
		if err := s.build(n); err != nil {
			panic(err) // the configuration built before
		}
		n.dead = false
		n.wake = int64(^uint64(0) >> 1)
		s.settle(n)
	})
}

// Boots returns how many times the node restarted.
func (n *Node) Boots() uint64 { return n.boots }
