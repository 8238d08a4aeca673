package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// CellsNodeStats is the part of a cells dataplane's /stats.json that the
// cells experiments read: every port's counters and sockets, the node's
// drop counters.
type CellsNodeStats struct {
	Ports []CellsPortStats `json:"ports"`
	Cells struct {
		Role          string `json:"role"`
		VOQBacklog    uint64 `json:"voq_backlog_bytes"`
		ReasmDiscards uint64 `json:"reasm_discarded"`
		Malformed     uint64 `json:"malformed"`
		MaxPollGap    int64  `json:"max_poll_gap_ns"`
		Stalled       int64  `json:"stalled_ns"`
		// Hosts are the edge's host ports' credit loops.
		Hosts []struct {
			RTT        int64  `json:"credit_rtt_ns"`
			WindowFull uint64 `json:"credit_window_full"`
			ShareFull  uint64 `json:"credit_share_full"`
			LateFull   uint64 `json:"credit_late_full"`
			Credits    uint64 `json:"credits"`
		} `json:"hosts"`
		Node struct {
			VOQDrops, FloodDrop, DeliverFail, HopDrops, NoRoute, AllocFail, RespraysDrop uint64
			FCIMarks, FCISeen                                                            uint64
		} `json:"node"`
	} `json:"cells"`
}

// CellsPortStats is one port of a cells dataplane: its counters (TX
// dropped counts the egress queue's tail drops and a full TX ring) and its
// sockets' receive drops (RX ring full, no fill buffer).
type CellsPortStats struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	RX, TX struct {
		Frames, Bytes, Dropped uint64
	}
	// Egress is the rate-limited port's queue: LateNs, the time it lost
	// to its worker's lateness (frames waited, the bucket was full).
	Egress struct {
		LateNs uint64 `json:"late_ns"`
	} `json:"egress"`
	RxSocketDrops uint64 `json:"-"`
}

// FetchCellsStats reads the statistics of the cells dataplane in ns.
func FetchCellsStats(ctx context.Context, ns string) (*CellsNodeStats, error) {
	var doc map[string]json.RawMessage
	if err := FetchStats(ctx, ns, &doc); err != nil {
		return nil, err
	}
	var s CellsNodeStats
	var dp struct {
		Ports []CellsPortStats `json:"ports"`
	}
	if err := json.Unmarshal(doc["dataplane"], &dp); err != nil {
		return nil, fmt.Errorf("statistics of the dataplane in %s: %w", ns, err)
	}
	if doc["cells"] == nil {
		return nil, fmt.Errorf("the dataplane in %s does not run mode cells", ns)
	}
	if err := json.Unmarshal(doc["cells"], &s.Cells); err != nil {
		return nil, fmt.Errorf("cells statistics of the dataplane in %s: %w", ns, err)
	}
	s.Ports = dp.Ports
	for i := range s.Ports {
		var pd portDoc
		if raw := doc["port_"+s.Ports[i].Name]; raw != nil {
			if err := json.Unmarshal(raw, &pd); err != nil {
				return nil, fmt.Errorf("port %s of the dataplane in %s: %w", s.Ports[i].Name, ns, err)
			}
		}
		s.Ports[i].RxSocketDrops = pd.rxDrops()
	}
	return &s, nil
}

// Port returns the counters of port name (zero if the node has none).
func (s *CellsNodeStats) Port(name string) CellsPortStats {
	for _, p := range s.Ports {
		if p.Name == name {
			return p
		}
	}
	return CellsPortStats{}
}

// CellsDrops sorts what a cells fabric dropped between two statistics by
// where: inside the fabric (Link: any node's link ports, their egress
// queues, TX rings and RX rings; VOQ: host frames an edge's VOQ refused;
// Reasm: records the reassembly discarded; Other: cells without a hop or a
// route, frames without a buffer, malformed frames, flood copies over the
// rate), at the egress host ports (Egress: their queues' tail drops and TX
// rings) and at the ingress host ports (Ingress: host frames the RX rings
// had no room for, before the fabric).
type CellsDrops struct {
	Link    uint64 `json:"link"`
	VOQ     uint64 `json:"voq"`
	Reasm   uint64 `json:"reasm"`
	Other   uint64 `json:"other"`
	Egress  uint64 `json:"egress"`
	Ingress uint64 `json:"ingress"`
}

// Fabric is every drop inside the fabric: Link + VOQ + Reasm + Other.
func (d CellsDrops) Fabric() uint64 { return d.Link + d.VOQ + d.Reasm + d.Other }

// Add adds o to d.
func (d *CellsDrops) Add(o CellsDrops) {
	d.Link += o.Link
	d.VOQ += o.VOQ
	d.Reasm += o.Reasm
	d.Other += o.Other
	d.Egress += o.Egress
	d.Ingress += o.Ingress
}

// String lists the nonzero kinds, or "none".
func (d CellsDrops) String() string {
	var p []string
	for _, k := range []struct {
		n string
		v uint64
	}{{"link", d.Link}, {"voq", d.VOQ}, {"reasm", d.Reasm}, {"other", d.Other}, {"egress", d.Egress}, {"ingress", d.Ingress}} {
		if k.v > 0 {
			p = append(p, fmt.Sprintf("%s %d", k.n, k.v))
		}
	}
	if len(p) == 0 {
		return "none"
	}
	return strings.Join(p, ", ")
}

// CellsDropsBetween is what one node dropped from before to after (the
// same dataplane's statistics).
func CellsDropsBetween(before, after *CellsNodeStats) CellsDrops {
	var d CellsDrops
	for _, a := range after.Ports {
		b := before.Port(a.Name)
		tx, rx := a.TX.Dropped-b.TX.Dropped, a.RxSocketDrops-b.RxSocketDrops
		switch a.Role {
		case "host":
			d.Egress += tx
			d.Ingress += rx
		default:
			d.Link += tx + rx
		}
	}
	an, bn := &after.Cells.Node, &before.Cells.Node
	d.VOQ = an.VOQDrops - bn.VOQDrops
	d.Reasm = after.Cells.ReasmDiscards - before.Cells.ReasmDiscards
	d.Other = an.FloodDrop - bn.FloodDrop + an.DeliverFail - bn.DeliverFail + an.HopDrops - bn.HopDrops +
		an.NoRoute - bn.NoRoute + an.AllocFail - bn.AllocFail + an.RespraysDrop - bn.RespraysDrop +
		after.Cells.Malformed - before.Cells.Malformed
	return d
}
