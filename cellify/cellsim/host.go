package cellsim

import (
	"encoding/binary"

	"github.com/linkfabric/linkfabric/link"
)

// HostConfig describes a host and its edge port.
type HostConfig struct {
	Rate     float64 // bits/s, both ways
	Buffer   int     // the edge's egress queue toward the host, bytes; 0: DefaultEgressBuffer
	TxBuffer int     // the host's send queue, bytes (sources drop beyond); 0: DefaultTxBuffer
}

// Host defaults.
const (
	DefaultEgressBuffer = 512 << 10
	DefaultTxBuffer     = 4 << 20
)

// HostStats counts a host's traffic.
type HostStats struct {
	Sent, SentBytes         uint64 // frames handed to the edge
	SrcDrops                uint64 // frames the send queue refused
	Recv, RecvBytes         uint64
	EgressDrops, EgressDrop uint64 // frames, bytes the egress queue refused
	EgressBusyNs            int64  // the egress port's transmit time
	MaxEgress               int    // bytes
	Foreign                 uint64 // frames received that no flow of this simulation sent
}

// Host is a simulated host on an edge's host port.
type Host struct {
	ID   int
	Name string
	MAC  [6]byte
	Edge *Node
	Port int
	sim  *Sim
	cfg  HostConfig

	txq     fifo[link.Frame]
	txBytes int
	txBusy  bool
	egq     fifo[link.Frame]
	egBytes int
	egBusy  bool

	Stats HostStats
}

// AddHost attaches a host to the edge's next host port.
func (s *Sim) AddHost(edge *Node, cfg HostConfig) *Host {
	if cfg.Buffer == 0 {
		cfg.Buffer = DefaultEgressBuffer
	}
	if cfg.TxBuffer == 0 {
		cfg.TxBuffer = DefaultTxBuffer
	}
	id := len(s.Hosts) + 1
	h := &Host{ID: id, Name: edge.Name + "h" + itoa(len(edge.hosts)), Edge: edge, Port: len(edge.hosts), sim: s, cfg: cfg,
		MAC: [6]byte{0x02, 0, 0, 0, byte(id >> 8), byte(id)}}
	edge.hosts = append(edge.hosts, h)
	s.Hosts = append(s.Hosts, h)
	return h
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// Config returns the host's configuration.
func (h *Host) Config() HostConfig { return h.cfg }

// EgressQueue returns the bytes in the edge's egress queue toward the host.
func (h *Host) EgressQueue() int { return h.egBytes }

// send queues a frame toward the edge.
func (h *Host) send(f link.Frame) bool {
	if h.txBytes+f.Len > h.cfg.TxBuffer {
		h.Stats.SrcDrops++
		h.sim.Mem.Free(f)
		return false
	}
	h.txq.push(f)
	h.txBytes += f.Len
	h.startTx()
	return true
}

func (h *Host) startTx() {
	if h.txBusy || h.txq.len() == 0 || h.Edge.stalled() {
		return
	}
	h.txBusy = true
	s := h.sim
	s.push(event{at: s.Now + s.serNs(h.txq.peek().Len, h.cfg.Rate), kind: evHostTx, i: int32(h.ID - 1)})
}

func (h *Host) txDone() {
	s := h.sim
	if h.Edge.stalled() { // the frame waits for the edge (sent again at its resume)
		h.txBusy = false
		return
	}
	f := h.txq.pop()
	h.txBytes -= f.Len
	h.txBusy = false
	h.Stats.Sent++
	h.Stats.SentBytes += uint64(f.Len)
	if id, _, ok := parseFlowFrame(s.Mem.Bytes(f.H, f.Len)); ok && id >= 0 && id < len(s.Flows) {
		fs := &s.Flows[id].Stats
		fs.Out++
		fs.OutBytes += uint64(f.Len)
	}
	if h.Edge.dead {
		h.Edge.Lost++
		s.Mem.Free(f)
	} else {
		h.Edge.HostRx(s.Now, h.Port, f)
		s.settle(h.Edge)
	}
	h.startTx()
}

// egress takes a frame the edge delivers toward the host.
func (h *Host) egress(f link.Frame) {
	s := h.sim
	if h.egBytes+f.Len > h.cfg.Buffer {
		h.Stats.EgressDrops++
		h.Stats.EgressDrop += uint64(f.Len)
		s.Mem.Free(f)
		return
	}
	h.egq.push(f)
	h.egBytes += f.Len
	h.Stats.MaxEgress = max(h.Stats.MaxEgress, h.egBytes)
	h.reportEgress()
	h.startEgress()
}

func (h *Host) startEgress() {
	if h.egBusy || h.egq.len() == 0 || h.Edge.stalled() {
		return
	}
	s := h.sim
	h.egBusy = true
	t := s.serNs(h.egq.peek().Len, h.cfg.Rate)
	h.Stats.EgressBusyNs += t
	s.push(event{at: s.Now + t, kind: evEgressTx, i: int32(h.ID - 1)})
}

func (h *Host) egressDone() {
	s := h.sim
	f := h.egq.pop()
	h.egBytes -= f.Len
	h.egBusy = false
	h.receive(f)
	h.reportEgress()
	s.settle(h.Edge)
	h.startEgress()
}

// reportEgress tells the edge its egress queue toward the host.
func (h *Host) reportEgress() {
	if !h.Edge.dead && !h.Edge.stalled() {
		h.Edge.SetEgressQueue(h.sim.Now, h.Port, h.egBytes)
	}
}

// receive accounts a frame to its flow and frees it.
func (h *Host) receive(f link.Frame) {
	s := h.sim
	b := s.Mem.Bytes(f.H, f.Len)
	h.Stats.Recv++
	h.Stats.RecvBytes += uint64(f.Len)
	id, seq, ok := parseFlowFrame(b)
	if ok && id >= 0 && id < len(s.Flows) && s.Flows[id].cfg.Dst == h {
		s.Flows[id].recv(seq, f.Len)
	} else {
		h.Stats.Foreign++
	}
	s.Mem.Free(f)
}

// Flow frames: Ethernet (optionally 802.1Q-tagged), IPv4, UDP with source
// port FlowConfig.Port, then a 4-byte magic, the flow id and the seq.
const flowMagic = 0x5F1A_B0C5

func parseFlowFrame(b []byte) (id, seq int, ok bool) {
	off := 14
	if len(b) >= 18 && binary.BigEndian.Uint16(b[12:]) == 0x8100 {
		off = 18
	}
	p := off + 20 + 8
	if len(b) < p+12 || binary.BigEndian.Uint32(b[p:]) != flowMagic {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b[p+4:])), int(binary.BigEndian.Uint32(b[p+8:])), true
}

// putFlowFrame writes a flow frame of len(b) bytes.
func putFlowFrame(b []byte, src, dst *Host, fc *FlowConfig, id, seq int) {
	copy(b[0:], dst.MAC[:])
	copy(b[6:], src.MAC[:])
	off := 12
	if fc.Tagged {
		binary.BigEndian.PutUint16(b[12:], 0x8100)
		binary.BigEndian.PutUint16(b[14:], uint16(fc.PCP&7)<<13)
		off = 16
	}
	binary.BigEndian.PutUint16(b[off:], 0x0800)
	ip := b[off+2:]
	clear(ip[:28])
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(min(len(ip), 0xFFFF)))
	ip[8], ip[9] = 64, 17
	ip[12], ip[13], ip[14], ip[15] = 10, 0, byte(src.ID>>8), byte(src.ID)
	ip[16], ip[17], ip[18], ip[19] = 10, 0, byte(dst.ID>>8), byte(dst.ID)
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], fc.Port)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(min(len(udp), 0xFFFF)))
	p := udp[8:]
	binary.BigEndian.PutUint32(p[0:], flowMagic)
	binary.BigEndian.PutUint32(p[4:], uint32(id))
	binary.BigEndian.PutUint32(p[8:], uint32(seq))
}
