package cellspipe

import (
	"fmt"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/spf13/pflag"
)

func init() {
	dataplane.RegisterFlags("cells", dataplane.Flags{Declare: declareFlags, Check: checkFlags})
}

// cellsFlags are the flags whose sense is the reverse of Config's
// fields (checkFlags sets those from them).
type cellsFlags struct {
	credits, packing bool
	preCredit        int
	creditAhead      int
}

// declareFlags declares mode cells' flags (--cells-*) into f, filling c's
// Config.
func declareFlags(f *pflag.FlagSet, c *dataplane.Config) {
	cc := ConfigOf(c)
	fl := &cc.flags
	f.StringVar(&cc.Spray, "cells-spray", "perm", "cells: how a cell picks its link: perm (round-robin in a random permutation, reshuffled), p2c (the shorter TX backlog of two random links) or hash (one link per flow)")
	f.IntVar(&cc.CellSize, "cells-size", 0, "cells: payload bytes per cell, at least 20 (default: what fits the smallest link MTU, 1494 at the testbed's 1526)")
	f.BoolVar(&fl.credits, "cells-credits", true, "cells: cells leave within the destination's credit grants (pull); false: as frames arrive (push)")
	f.IntVar(&fl.preCredit, "cells-pre-credit", DefaultPreCredit, "cells: bytes each VOQ may send ahead of its grant, so a packet after an idle spell skips the credit round trip; 0: none; the same at every edge (another is logged)")
	f.IntVar(&fl.creditAhead, "cells-credit-ahead", DefaultCreditAhead, "cells: bytes a VOQ's credit request names beyond its backlog (granted and paced by the destination, not counted in flight until bytes use it), so a short flow's traffic asks for credit less often; 0: none; the same at every edge (another is logged)")
	f.BoolVar(&fl.packing, "cells-packing", true, "cells: pack a queue's frames back to back into cells; false: each frame's bytes in cells of their own")
	f.Uint16Var(&cc.NodeID, "cells-node-id", 0, "cells: this node's fabric address: 1-1023 for an edge, 1-65535 for a fabric node (default: from the first port's MAC)")
	f.StringVar(&cc.LinkMode, "cells-link-mode", "none", "cells: what runs under the cells on each link: none, lg, lgnb, monitor or fec (see above)")
	f.DurationVar(&cc.ReachInterval, "cells-reach-interval", 0, "cells: REACH period on every link (default 5ms)")
	f.IntVar(&cc.ReachTh, "cells-reach-th", 0, "cells: REACH intervals in a row without one that take a link out of the routes (default 30: with the 5ms period rides out a peer's scheduling stalls of up to 150ms)")
	f.IntVar(&cc.ReachUp, "cells-reach-up", 0, "cells: good REACH intervals in a row that bring a link back (default 3)")
	f.StringVar(&cc.EdgeDelivery, "cells-edge-delivery", edgeDeliveryTC, "cells: how an edge's kernel path (one worker, --fastpath auto) delivers in-order cells to its host port: tc (passed up the link port's stack, redirected by a TCX program) or xdp (redirected from XDP: a veth host port's peer needs GRO on or an XDP program)")
	f.DurationVar(&cc.ReasmTimeout, "cells-reasm-timeout", 0, "cells: how long a missing cell may hold up its stream before it is skipped (default 30ms)")
	f.StringVar(&cc.LossClasses, "cells-loss-classes", "", "cells: loss classes per link (RAIL): the bounds of classes 1, 2, ... on a link's measured loss, e.g. 1e-6,1e-3,1e-1, or default")
	f.StringVar(&cc.ClassMap, "cells-class-map", "", "cells, with --cells-loss-classes: traffic class → loss class, tc=k,... (tc: 802.1p priority, or DSCP/8 for untagged IP), e.g. 5=1")
}

// checkFlags sets Config's NoCredits, NoPacking, PreCredit and CreditAhead from
// their flags.
func checkFlags(_ *pflag.FlagSet, c *dataplane.Config) error {
	cc := ConfigOf(c)
	fl := cc.flags
	cc.NoCredits, cc.NoPacking = !fl.credits, !fl.packing
	if fl.preCredit < 0 {
		return fmt.Errorf("--cells-pre-credit %d: want bytes ≥ 0 (0: none)", fl.preCredit)
	}
	if fl.creditAhead < 0 {
		return fmt.Errorf("--cells-credit-ahead %d: want bytes ≥ 0 (0: none)", fl.creditAhead)
	}
	cc.CreditAhead = fl.creditAhead
	if fl.creditAhead == 0 {
		cc.CreditAhead = -1 // none
	}
	cc.PreCredit = fl.preCredit
	if fl.preCredit == 0 {
		cc.PreCredit = -1 // none
	}
	return nil
}
