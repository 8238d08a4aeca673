package cellsexp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
)

// CellsNodeStats is the part of a cells dataplane's /stats.json that the
// cells experiments read: every port's counters and sockets, the node's
// drop counters.
type CellsNodeStats struct {
	Ports []CellsPortStats `json:"ports"`
	Cells struct {
		Role          string           `json:"role"`
		VOQBacklog    uint64           `json:"voq_backlog_bytes"`
		ReasmDiscards uint64           `json:"reasm_discarded"`
		Malformed     uint64           `json:"malformed"`
		MaxPollGap    int64            `json:"max_poll_gap_ns"`
		Stalled       int64            `json:"stalled_ns"`
		Hosts         []CellsHostStats `json:"hosts"`
		// Links: each link port's layer under the cells (nil with
		// --cells-link-mode none): cells it dropped for want of room in
		// its queue.
		Links []struct {
			Name string `json:"name"`
			LG   *struct {
				QueueDrops uint64 `json:"queue_drops"`
			} `json:"link_layer"`
		} `json:"links"`
		Node struct {
			VOQDrops, FloodDrop, FloodHeldDrop, DeliverFail, HopDrops, NoRoute, AllocFail, RespraysDrop uint64
			FCIMarks, FCISeen                                                                           uint64
			CellsCut, Forwarded, ReachTx, ReachQuiet, CreditReqTx, CreditGrantTx                        uint64
		} `json:"node"`
	} `json:"cells"`
}

// CellsHostStats is an edge's host port: its credit loop, and the
// deliveries it dropped because its TX ring and the queue in front of it
// were full.
type CellsHostStats struct {
	QueueDrops uint64 `json:"queue_drops"`
	RTT        int64  `json:"credit_rtt_ns"`
	WindowFull uint64 `json:"credit_window_full"`
	ShareFull  uint64 `json:"credit_share_full"`
	LateFull   uint64 `json:"credit_late_full"`
	WaitedFor  uint64 `json:"credit_waited_for"`
	Credits    uint64 `json:"credits"`
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
	if err := bed.FetchStats(ctx, ns, &doc); err != nil {
		return nil, err
	}
	return parseCellsStats(ns, doc)
}

// parseCellsStats reads the statistics doc of the cells dataplane in ns.
func parseCellsStats(ns string, doc map[string]json.RawMessage) (*CellsNodeStats, error) {
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
		var pd bed.PortDoc
		if raw := doc["port_"+s.Ports[i].Name]; raw != nil {
			if err := json.Unmarshal(raw, &pd); err != nil {
				return nil, fmt.Errorf("port %s of the dataplane in %s: %w", s.Ports[i].Name, ns, err)
			}
		}
		s.Ports[i].RxSocketDrops = pd.RxDrops()
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
// rate), at the egress host ports (Egress: their queues' tail drops, TX
// rings, and the deliveries waiting for a full TX ring that found the
// queue in front of it full too) and at the ingress host ports (Ingress: host frames the RX rings
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
	for i, h := range after.Cells.Hosts {
		if i < len(before.Cells.Hosts) {
			d.Egress += h.QueueDrops - before.Cells.Hosts[i].QueueDrops
		}
	}
	an, bn := &after.Cells.Node, &before.Cells.Node
	d.VOQ = an.VOQDrops - bn.VOQDrops
	d.Reasm = after.Cells.ReasmDiscards - before.Cells.ReasmDiscards
	d.Other = an.FloodDrop - bn.FloodDrop + an.FloodHeldDrop - bn.FloodHeldDrop + an.DeliverFail - bn.DeliverFail + an.HopDrops - bn.HopDrops +
		an.NoRoute - bn.NoRoute + an.AllocFail - bn.AllocFail + an.RespraysDrop - bn.RespraysDrop +
		after.Cells.Malformed - before.Cells.Malformed
	return d
}

// CellsArms are the arms of the cells experiments: credits (pull: cells
// leave within the egress scheduler's grants) and push (--cells-credits=false).
var CellsArms = []string{"credits", "push"}

// cellsArmArgs are the `linkfabric run` arguments of an arm.
func cellsArmArgs(arm string) []string {
	return []string{"--cells-credits=" + strconv.FormatBool(arm == "credits")}
}

// portSample is a port's transmit counters at a time.
type portSample struct {
	t             time.Time
	frames, bytes uint64
	lateNs        uint64
}

// samplePort reads port's TX counters of the cells dataplane in ns.
func samplePort(ctx context.Context, ns, port string) (portSample, error) {
	t := time.Now()
	s, err := FetchCellsStats(ctx, ns)
	if err != nil {
		return portSample{}, err
	}
	p := s.Port(port)
	// The counters are read in the middle of the request.
	return portSample{t: t.Add(time.Since(t) / 2), frames: p.TX.Frames, bytes: p.TX.Bytes, lateNs: p.Egress.LateNs}, nil
}

// wireBitsBetween is the bits a port put on the wire between two samples
// (each frame's length plus preamble, FCS and gap) and the time between.
func wireBitsBetween(a, b portSample) (bits float64, secs float64) {
	return float64((b.bytes-a.bytes)+24*(b.frames-a.frames)) * 8, b.t.Sub(a.t).Seconds()
}

// cellsDropsAll sums what each switch dropped between two reads of their
// statistics (CellsFabric.Stats), and gives the longest time a worker was
// kept from running (ms) in after.
func cellsDropsAll(before, after map[string]*CellsNodeStats) (total CellsDrops, byNode map[string]CellsDrops, maxGapMs float64) {
	byNode = map[string]CellsDrops{}
	for n, a := range after {
		b, ok := before[n]
		if !ok {
			continue
		}
		d := CellsDropsBetween(b, a)
		byNode[n] = d
		total.Add(d)
		maxGapMs = max(maxGapMs, float64(a.Cells.MaxPollGap)/1e6)
	}
	return total, byNode, maxGapMs
}

// cellsSeriesRow is a row of a cells experiment's CSV: a flow's delivered
// rate in one bin of time.
type cellsSeriesRow struct {
	Arm, Transport string
	Run            int
	Flow           string
	TMs, Bps       float64
}

// writeCellsCSV writes rows as CSV to path (its directory made).
func writeCellsCSV(path string, rows []cellsSeriesRow) error {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.Arm, r.Transport, strconv.Itoa(r.Run), r.Flow, strconv.FormatFloat(r.TMs, 'f', 1, 64), strconv.FormatFloat(r.Bps, 'f', 0, 64)}
	}
	return report.WriteCSV(path, []string{"arm", "transport", "run", "flow", "t_ms", "bps"}, out)
}

// cellsStalled is, by switch, how long its node's clock stood still between
// two reads of the statistics (ms).
func cellsStalled(before, after map[string]*CellsNodeStats) map[string]float64 {
	m := map[string]float64{}
	for n, a := range after {
		if b, ok := before[n]; ok {
			m[n] = float64(a.Cells.Stalled-b.Cells.Stalled) / 1e6
		}
	}
	return m
}

// joinFloats formats each of v divided by div with format and joins them
// with sep.
func joinFloats(v []float64, div float64, format, sep string) string {
	p := make([]string, len(v))
	for i, x := range v {
		p[i] = fmt.Sprintf(format, x/div)
	}
	return strings.Join(p, sep)
}

func fmtStalled(m map[string]float64) string {
	var p []string
	for _, n := range bed.SortedNames(m) {
		p = append(p, fmt.Sprintf("%s %.0f ms", n, m[n]))
	}
	return strings.Join(p, ", ")
}

// CellsStats is the part of a cell node's /stats.json the cells
// experiments read.
type CellsStats struct {
	Dataplane struct {
		Ports []struct {
			Name   string
			Egress *struct {
				Dropped uint64 `json:"dropped_frames"`
			} `json:"egress"`
		} `json:"ports"`
	} `json:"dataplane"`
	Cells *struct {
		CellSize  int  `json:"cell_size"`
		Credits   bool `json:"credits"`
		Packing   bool `json:"packing"`
		PreCredit int  `json:"pre_credit_bytes"`
		Links     []struct {
			Name    string
			TxBytes uint64 `json:"tx_bytes"`
		} `json:"links"`
		ReasmDiscards uint64 `json:"reasm_discarded"`
		ReasmTimeouts uint64 `json:"reasm_timeouts"`
		Node          struct {
			VOQDrops uint64
		} `json:"node"`
	} `json:"cells"`
}

// EgressDrops sums the frames the rate-limited ports' egress queues dropped.
func (s *CellsStats) EgressDrops() uint64 {
	var n uint64
	for _, p := range s.Dataplane.Ports {
		if p.Egress != nil {
			n += p.Egress.Dropped
		}
	}
	return n
}

// cellsStatsOf reads the statistics of the dataplane on switch sw.
func cellsStatsOf(ctx context.Context, b *bed.Bed, sw string) (*CellsStats, error) {
	var s CellsStats
	if err := bed.FetchStats(ctx, b.TB.NS(sw), &s); err != nil {
		return nil, err
	}
	return &s, nil
}
