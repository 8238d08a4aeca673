package cellsim

import (
	"encoding/binary"
	"fmt"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// LinkDeath kills one of a bundle's 4 links (50 µs long) 10 ms into a
// 0.6 Gbit/s flow, at a moment it carries a cell (both ends see the carrier
// go at once). Without LinkGuardian the frames
// lost must be at most those touching the cells the link held (queued or
// on the wire): 1500 B frames in 1460 B cells, so at most 2 per cell. With
// LinkGuardian under the cells (and 0.1 % random loss on every link for
// good measure) the held cells are sprayed again: nothing is lost.
func LinkDeath(seed uint64) (*scenario.Result, error) {
	r, done := begin("linkdeath", seed)
	for _, lg := range []bool{false, true} {
		s := New(Config{Seed: seed})
		lc := LinkConfig{Rate: linkRate, Delay: 50 * us}
		if lg {
			lc.LG, lc.Loss = true, Bernoulli{P: 1e-3}
		}
		t := Bundle(s, 4, lc, HostConfig{Rate: hostRate})
		if err := s.Start(); err != nil {
			return nil, err
		}
		f := s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 1500, Rate: 0.6e9, Stop: s.Now + 30*ms})
		dead := t.Links[1]
		// Kill it at the first moment after 10 ms that it has a cell on
		// the wire, so that the death bites.
		var kill func()
		kill = func() {
			if d := dead.AB; d.busy && d.curCell { // (a frame in flight may be a REACH)
				dead.SetUp(false, true)
				return
			}
			s.At(s.Now+us, kill)
		}
		s.At(s.Now+10*ms, kill)
		s.RunFor(40 * ms)
		account(r, s)
		if err := s.Leaked("linkdeath"); err != nil {
			return nil, err
		}
		heldCells := dead.AB.Stats.DeathCells
		if lg {
			r.Add("lg_lost", float64(f.Lost()), 0, 0, "LinkGuardian: no frame lost")
			r.Add("lg_handed_back", float64(dead.AB.Stats.HandedBack), 1, nan, "the dead link's held frames went back to the sprayer")
			r.Report("lg_retransmissions", float64(s.retx()), "random losses repaired link-locally")
			r.Add("lg_out_of_order", float64(f.Stats.Reordered+f.Stats.Dup), 0, 0, "and delivered once, in order")
		} else {
			r.Add("plain_lost", float64(f.Lost()), 1, float64(2*heldCells), "≥ 1 and ≤ 2 per cell the link held")
			r.Report("plain_cells_held", float64(heldCells), "cells queued or on the wire when the link died")
			r.Add("plain_blackholed", float64(dead.AB.Stats.Blackholed), 0, 0, "nothing sent to the dead link after the carrier went")
		}
	}
	return done(), nil
}

func (s *Sim) retx() uint64 {
	var n uint64
	for _, d := range s.dirs {
		n += d.Stats.Retx
	}
	return n
}

// Exclusion: a bundle of 4 links carries 0.5 Gbit/s. (1) Link 2 loses 2 %
// of its frames from 5 ms to 30 ms; a loss monitor over each direction's
// last 512 frames reports every ms: the link must leave within a report
// period (and a REACH to tell the other end) of its first loss, once
// (no flapping while it stays lossy and nearly idle), and return after the
// loss has left the monitor's window plus Th REACH intervals. (2)
// Hysteresis on link 3, rates fed directly: 2e-3 (above LossFaulty 1e-3)
// excludes it, 5e-4 (between LossClear 1e-4 and LossFaulty) keeps it out,
// 5e-5 lets it return after Th intervals; 5e-4 on a usable link 0 leaves
// it in.
func Exclusion(seed uint64) (*scenario.Result, error) {
	r, done := begin("exclusion", seed)
	s := New(Config{Seed: seed, LossReport: ms})
	t := Bundle(s, 4, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate})
	lossy := t.Links[2]
	lossy.Monitor(512)
	if err := s.Start(); err != nil {
		return nil, err
	}
	t0 := s.Now
	e1, e2 := t.Edges[0], t.Edges[1]
	iv := e1.Reach().Config().Interval
	th := int64(e1.Reach().Config().Th)
	f := s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 1500, Rate: 0.5e9, Stop: t0 + 150*ms})
	s.At(t0+5*ms, func() { lossy.SetLoss(Bernoulli{P: 0.02}) })
	var cellsWhileOut uint64
	s.At(t0+8*ms, func() { cellsWhileOut = lossy.AB.Stats.TxCells })
	s.At(t0+30*ms, func() {
		cellsWhileOut = lossy.AB.Stats.TxCells - cellsWhileOut
		lossy.SetLoss(nil)
	})
	// Hysteresis on link 3 (both ends), and 5e-4 on link 0.
	feed := func(l int, loss float64) {
		e1.SetLoss(s.Now, l, loss)
		e2.SetLoss(s.Now, l, loss)
		s.settle(e1)
		s.settle(e2)
	}
	var usable3 []bool
	look := func() { usable3 = append(usable3, e1.Reach().Link(3).Usable) }
	s.At(t0+40*ms, func() { feed(3, 2e-3); feed(0, 5e-4) })
	s.At(t0+41*ms, look) // out
	s.At(t0+42*ms, func() { feed(3, 5e-4) })
	s.At(t0+45*ms, look) // still out
	var back3 int64
	s.At(t0+46*ms, func() { feed(3, 5e-5); back3 = s.Now })
	s.RunFor(160 * ms)
	account(r, s)

	l2 := e1.Reach().Link(2)
	first := min(lossy.AB.Stats.FirstLoss, lossy.BA.Stats.FirstLoss)
	if lossy.AB.Stats.Lost == 0 || lossy.BA.Stats.Lost == 0 {
		first = max(lossy.AB.Stats.FirstLoss, lossy.BA.Stats.FirstLoss)
	}
	out2 := max(l2.LastExcluded, e2.Reach().Link(2).LastExcluded)
	r.Add("excluded_after_us", float64(out2-first)/1e3, 0, float64(ms+2*iv)/1e3,
		"both ends out within a report period and a REACH of the first loss")
	r.Add("exclusions", float64(l2.Exclusions), 1, 1, "once: no flapping while lossy")
	r.Add("cells_while_excluded", float64(cellsWhileOut), 0, 0, "no cell sprayed onto it while out")
	// Back once the monitor's 512 frames hold no loss (an excluded link
	// carries one REACH per interval: 512 intervals), the next report
	// (1 ms) and Th good intervals; not before Th intervals.
	r.Add("returned_after_ms", float64(l2.LastReturned-(t0+30*ms))/1e6, float64(th*iv)/1e6, float64(512*iv+ms+(th+1)*iv)/1e6,
		"after the monitor's window is clean and Th good intervals")
	l3 := e1.Reach().Link(3)
	out := 0.0
	if !usable3[0] && !usable3[1] {
		out = 1
	}
	r.Add("hysteresis_held_out", out, 1, 1, "5e-4 (between clear and faulty) keeps an excluded link out")
	r.Add("hysteresis_return_us", float64(l3.LastReturned-back3)/1e3, float64((th-1)*iv)/1e3, float64((th+1)*iv)/1e3,
		"returns Th intervals after the rate falls below LossClear")
	r.Add("hysteresis_link0_exclusions", float64(e1.Reach().Link(0).Exclusions), 0, 0, "5e-4 does not exclude a usable link")
	r.Report("flow_lost", float64(f.Lost()), "frames lost to the 2 % before the exclusion")
	return done(), nil
}

// ReasmTimeout drops one cell (the 300th on link 0) of a flow of 1500 B
// frames in 1460 B cells over a 2-link bundle: the reassembly must skip
// the hole once, after its timeout, discard exactly the records the cell
// touched, and deliver every other frame in order.
func ReasmTimeout(seed uint64) (*scenario.Result, error) {
	r, done := begin("reasm", seed)
	s := New(Config{Seed: seed})
	t := Bundle(s, 2, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate})
	drop := &DropCells{Nth: map[int]bool{300: true}}
	t.Links[0].AB.loss = drop
	if err := s.Start(); err != nil {
		return nil, err
	}
	f := s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 1500, Rate: 0.5e9, Stop: s.Now + 20*ms})
	s.RunFor(30 * ms)
	account(r, s)
	if len(drop.Dropped) != 1 {
		return nil, fmt.Errorf("reasm: %d cells dropped", len(drop.Dropped))
	}
	touched := recordsTouched(drop.Dropped[0])
	rs := t.Edges[1].ReasmStats()
	r.Add("timeouts", float64(rs.Timeouts), 1, 1, "one hole skipped")
	r.Add("discarded_records", float64(rs.DiscardedRecords), float64(touched), float64(touched), "exactly the records the lost cell touched")
	r.Add("frames_lost", float64(f.Lost()), float64(touched), float64(touched), "and no other frame")
	r.Add("out_of_order", float64(f.Stats.Reordered+f.Stats.Dup), 0, 0, "the rest in order, once")
	r.Report("records_touched", float64(touched), "by the lost cell")
	return done(), nil
}

// recordsTouched counts the records with bytes in a cell.
func recordsTouched(cell []byte) int {
	h, err := cellify.ParseCell(cell)
	if err != nil {
		return -1
	}
	if h.First == cellify.NoRecord {
		return 1
	}
	n := 0
	if h.First > 0 {
		n = 1
	}
	p := cell[cellify.CellPayloadOffset : cellify.CellPayloadOffset+int(h.Len)]
	for pos := int(h.First); pos < len(p); {
		n++
		if pos+2 > len(p) {
			break
		}
		pos += 2 + int(binary.BigEndian.Uint16(p[pos:]))
	}
	return n
}

// FCI: fabric3 with the four links into e3 at 200 Mbit/s (800 Mbit/s in
// all, below the 1 Gbit/s port) and a 1 Gbit/s flow from e1 to e3 with
// credits. Without FCI the credits (port rate + 2 %) overrun the links into
// e3 and their queues drop; with FCI (fabric nodes mark above 32 KiB) e3's
// scheduler lowers e1's credit rate: far fewer drops and a granted rate
// below the port's.
func FCI(seed uint64) (*scenario.Result, error) {
	r, done := begin("fci", seed)
	drops := map[bool]float64{}
	for _, fci := range []bool{false, true} {
		s := New(Config{Seed: seed, Node: func(_ *Node, c *cellify.NodeConfig) {
			if !fci {
				c.FCIThreshold = 0
			}
		}})
		t := Fabric3(s, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate}, [3]int{1, 1, 1})
		for _, l := range t.Links {
			if l.AB.From.Name == "e3" {
				l.AB.rate, l.BA.rate = 200e6, 200e6
			}
		}
		if err := s.Start(); err != nil {
			return nil, err
		}
		e3 := t.Edges[2]
		f := s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[2], Size: 1500, Rate: hostRate, Stop: s.Now + 30*ms})
		var g0 uint64
		s.At(s.Now+10*ms, func() { g0 = e3.Scheduler(0).Stats.GrantedBytes })
		var granted float64
		s.At(s.Now+30*ms, func() { granted = float64(e3.Scheduler(0).Stats.GrantedBytes-g0) * 8 / 20e-3 })
		s.RunFor(40 * ms)
		account(r, s)
		d := float64(fabricCellDrops(s))
		drops[fci] = d
		if fci {
			marks := uint64(0)
			for _, fb := range t.Fabric {
				marks += fb.Stats.FCIMarks
			}
			r.Add("fci_marks", float64(marks), 1, nan, "the fabric nodes marked cells")
			r.Add("fci_decreases", float64(e3.Scheduler(0).Stats.FCIDecreases), 1, nan, "e3's scheduler lowered e1's rate")
			r.Add("fci_granted_ratio", granted/e3.Scheduler(0).CreditRate(), nan, 0.9, "credit granted below the credit rate")
			r.Report("fci_drops", d, "cells lost in the fabric with FCI")
			r.Report("fci_goodput", float64(f.Stats.RecvBytes)*8/30e-3/hostRate, "")
		} else {
			r.Report("nofci_drops", d, "cells lost in the fabric without FCI")
			r.Report("nofci_granted_ratio", granted/e3.Scheduler(0).CreditRate(), "")
			r.Report("nofci_goodput", float64(f.Stats.RecvBytes)*8/30e-3/hostRate, "")
		}
	}
	r.Add("drop_ratio", drops[true]/max(drops[false], 1), nan, 0.5, "FCI at least halves the fabric drops")
	return done(), nil
}
