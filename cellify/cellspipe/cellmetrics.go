package cellspipe

import (
	"errors"
	"strconv"

	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/metrics"
)

// Register exports the node's cells counters and each link port's.
func (in *cellsInstance) Register(r *metrics.Registry) error {
	return errors.Join(registerCells(r, in.stats), registerCellLinks(r, in.stats))
}

// registerCellLinks exports each link port's state in the cells' routes
// and the link layer under its cells (the LinkGuardian or fec layer of
// --cells-link-mode): its session, like a link's (linkpipe.RegisterSession's
// names, lane 0), and its counters. A link whose layer is none reads 0
// and the session state "none".
func registerCellLinks(r *metrics.Registry, c *Stats) error {
	var errs metrics.Errs
	add := errs.Add
	for i, l := range c.Snapshot().Links {
		link := func() LinkSnapshot {
			if s := c.Snapshot(); i < len(s.Links) {
				return s.Links[i]
			}
			return LinkSnapshot{}
		}
		layer := func(f func(g *linkpipe.CellLinkLG) uint64) func() uint64 {
			return func() uint64 {
				if g := link().LG; g != nil {
					return f(g)
				}
				return 0
			}
		}
		port := []string{"port", l.Name}
		flag := func(b bool) float64 {
			if b {
				return 1
			}
			return 0
		}
		add(r.GaugeFunc("linkfabric_cells_link_usable", "1 if the link port is in the cells' routes (up and reaching its peer), else 0.", func() float64 { return flag(link().Usable) }, port...))
		add(r.GaugeFunc("linkfabric_cells_link_up", "1 if the link port's carrier is up, else 0.", func() float64 { return flag(link().Up) }, port...))
		lane := append(port, "lane", "0")
		add(r.GaugeFunc("linkfabric_link_session_up", "1 if the link session is up (both ends agreed), else 0.", func() float64 {
			g := link().LG
			return flag(g != nil && g.Session == "up")
		}, lane...))
		add(r.InfoFunc("linkfabric_link_session_info", "The link session's state (down, hello-sent, up, mismatch), why the peer does not fit, the integrity check agreed and the peer's epoch and node (value 1).",
			linkpipe.SessionInfoLabels, func() []string {
				g := link().LG
				if g == nil {
					return []string{"none", "", "", "", ""}
				}
				node := ""
				if g.PeerNode != 0 {
					node = strconv.Itoa(int(g.PeerNode))
				}
				return []string{g.Session, g.Mismatch, "", "", node}
			}, lane...))
		for _, m := range []struct {
			name, help string
			f          func(g *linkpipe.CellLinkLG) uint64
		}{
			{"sent", "Cells the link layer sent (data cells with fec).", func(g *linkpipe.CellLinkLG) uint64 { return g.Sent }},
			{"retx_copies", "Retransmitted copies of lost cells.", func(g *linkpipe.CellLinkLG) uint64 { return g.RetxCopies }},
			{"lost_detected", "Cells found missing by the receiver.", func(g *linkpipe.CellLinkLG) uint64 { return g.LostSeen }},
			{"recovered", "Missing cells recovered (retransmitted or rebuilt from parity).", func(g *linkpipe.CellLinkLG) uint64 { return g.Recovered }},
			{"gave_up", "Missing cells given up on (lost for good).", func(g *linkpipe.CellLinkLG) uint64 { return g.GaveUp }},
			{"handed_back", "Cells given back to the sprayer when the link left the routes or its session reset.", func(g *linkpipe.CellLinkLG) uint64 { return g.HandedBack }},
			{"queue_drops", "Cells that found the link layer's queue full, or met its session not up with fec (lost).", func(g *linkpipe.CellLinkLG) uint64 { return g.QueueDrops }},
			{"not_agreed", "Link frames dropped before the session agreed.", func(g *linkpipe.CellLinkLG) uint64 { return g.NotAgreed }},
			{"session_resets", "Resets of the link session (agreements with a new peer epoch).", func(g *linkpipe.CellLinkLG) uint64 { return g.Resets }},
			{"give_ups", "Times the link was taken out because its cells went unacknowledged.", func(g *linkpipe.CellLinkLG) uint64 { return g.GiveUps }},
		} {
			add(r.CounterFunc("linkfabric_cells_link_layer_"+m.name+"_total", "Cells' link layer: "+m.help, layer(m.f), port...))
		}
		add(r.GaugeFunc("linkfabric_cells_link_layer_loss_rate", "Cells' link layer: loss rate of what the link port receives (before recovery).", func() float64 {
			if g := link().LG; g != nil {
				return g.LossRate
			}
			return 0
		}, port...))
	}
	return errs.Err()
}
