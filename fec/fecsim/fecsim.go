// Package fecsim runs a fec.Sender and a fec.Receiver over a simulated lossy
// link on a virtual clock: one direction, FIFO, a fixed delay, every frame
// (data copies and parity) dropped by a linksim.LossModel. Each end has its
// own linksim.Pool, and a frame that crosses the wire is copied into the
// receiver's, so ownership is checked at both ends.
//
// It records which host frames arrive, checks that each is byte for byte the
// frame sent, and computes from the realised drops what XOR parity must
// recover (the oracle): a data frame is lost for good exactly when every
// copy of it was dropped and so was another frame of its group.
package fecsim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Config configures a run.
type Config struct {
	Frames int                      // host frames to send (> 0)
	N      int                      // group size (0: no parity)
	Copies int                      // transmissions per data frame (0 or 1: once)
	Seed   uint64                   // frame lengths and loss
	Loss   func() linksim.LossModel // a fresh loss model (nil: no loss)
	// MinLen and MaxLen bound the host frame lengths (uniform); 0 means
	// 60 and 1514. Equal values give fixed-length frames.
	MinLen, MaxLen int
	Gap            int64 // ns between host frames (default 1000)
	Delay          int64 // link delay, ns (default 10000)
	Flush, Wait    int64 // fec.SenderConfig.Flush and ReceiverConfig.Wait (0: defaults)
	Immediate      bool  // out-of-order delivery
	InitSeq        seqhdr.Seq
	// Progress, if set, is called every 2^16 frames and at the end.
	Progress func(done, total int)
}

// Result is what a run measured.
type Result struct {
	Frames    uint64 `json:"frames"`    // host frames sent
	Delivered uint64 `json:"delivered"` // distinct host frames delivered
	Lost      uint64 `json:"lost"`      // host frames never delivered
	// OracleLost is what must be lost given the realised drops (see the
	// package comment); a correct receiver has Lost == OracleLost when
	// its Wait covers the parity's delay.
	OracleLost uint64 `json:"oracle_lost"`
	Groups     uint64 `json:"groups"`        // parity groups sent
	GroupsFail uint64 `json:"groups_failed"` // groups with a host frame never delivered
	// OracleGroupsFail: groups that lost two or more of their frames.
	OracleGroupsFail uint64 `json:"oracle_groups_failed"`
	WireFrames       uint64 `json:"wire_frames"`  // frames put on the link
	WireDropped      uint64 `json:"wire_dropped"` // of which dropped
	DataWire         uint64 `json:"data_wire"`    // data transmissions
	DataDropped      uint64 `json:"data_dropped"` // of which dropped
	WireBytes        uint64 `json:"wire_bytes"`   // bytes put on the link
	HostBytes        uint64 `json:"host_bytes"`   // bytes of the host frames
	OutOfOrder       uint64 `json:"out_of_order"` // deliveries of a frame older than one delivered before
	Duplicates       uint64 `json:"duplicates"`   // host frames delivered twice
	Corrupt          uint64 `json:"corrupt"`      // deliveries not byte-equal to the frame sent
	// Leaked are frames still held by either end after the link went
	// quiet; PoolErrors are ownership errors (double frees).
	Leaked     int               `json:"leaked"`
	PoolErrors []string          `json:"pool_errors,omitempty"`
	Sender     fec.SenderStats   `json:"sender"`
	Receiver   fec.ReceiverStats `json:"receiver"`
	Duration   int64             `json:"virtual_ns"`
}

// Residual is the measured loss rate after recovery.
func (r *Result) Residual() float64 { return float64(r.Lost) / float64(max(r.Frames, 1)) }

// LinkLoss is the measured loss rate of the wire.
func (r *Result) LinkLoss() float64 {
	return float64(r.WireDropped) / float64(max(r.WireFrames, 1))
}

// GroupFailRate is the fraction of groups that lost a host frame.
func (r *Result) GroupFailRate() float64 { return float64(r.GroupsFail) / float64(max(r.Groups, 1)) }

// Overhead is the bytes on the wire per host byte, less one.
func (r *Result) Overhead() float64 { return float64(r.WireBytes)/float64(max(r.HostBytes, 1)) - 1 }

const (
	bufSize  = 2048
	headroom = 256
	window   = 512 // the receiver's: the least power of two holding two groups of fec.MaxN
)

type arrival struct {
	t int64
	f link.Frame
}

type group struct {
	first, count int // host frame indices
	parityLost   bool
}

type run struct {
	cfg     Config
	rng     *rand.Rand
	loss    linksim.LossModel
	a, b    *linksim.Pool
	snd     *fec.Sender
	rcv     *fec.Receiver
	wire    []arrival // FIFO
	head    int
	lens    []uint16
	dropped []uint8 // copies dropped per host frame
	sentIdx int     // host frames sequenced so far (index of the next)
	grouped int     // host frames covered by a parity so far
	groups  []group
	got     []bool
	lastID  int
	res     Result
}

// Run runs cfg to completion: every frame sent, the wire empty, both ends
// quiet.
func Run(cfg Config) (*Result, error) {
	if cfg.Frames <= 0 {
		return nil, fmt.Errorf("fecsim: Frames %d: want > 0", cfg.Frames)
	}
	if cfg.MinLen == 0 {
		cfg.MinLen = 60
	}
	if cfg.MaxLen == 0 {
		cfg.MaxLen = 1514
	}
	if cfg.MinLen < 22 || cfg.MaxLen < cfg.MinLen || cfg.MaxLen > 1514 {
		return nil, fmt.Errorf("fecsim: frame lengths %d..%d: want 22 ≤ min ≤ max ≤ 1514", cfg.MinLen, cfg.MaxLen)
	}
	if cfg.Gap <= 0 {
		cfg.Gap = 1000
	}
	if cfg.Delay <= 0 {
		cfg.Delay = 10_000
	}
	r := &run{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		lens:    make([]uint16, cfg.Frames),
		dropped: make([]uint8, cfg.Frames),
		got:     make([]bool, cfg.Frames),
		lastID:  -1,
	}
	if cfg.Loss != nil {
		r.loss = cfg.Loss()
	}
	// Enough buffers for the receiver's window and the wire in flight.
	inflight := int(cfg.Delay/cfg.Gap+2) * max(cfg.Copies, 1) * 2
	r.a = linksim.NewPool(64+inflight, bufSize, headroom)
	r.b = linksim.NewPool(window+64+inflight, bufSize, headroom)
	var err error
	r.snd, err = fec.NewSender(fec.SenderConfig{
		N: cfg.N, Copies: cfg.Copies, Flush: cfg.Flush, BufLen: bufSize - headroom,
		LocalMAC: [6]byte{2, 0, 0, 0, 0, 0xa}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 0xb}, InitSeq: cfg.InitSeq,
	}, r.a)
	if err != nil {
		return nil, err
	}
	r.rcv, err = fec.NewReceiver(fec.ReceiverConfig{Window: window, Wait: cfg.Wait, Immediate: cfg.Immediate, InitSeq: cfg.InitSeq}, r.b)
	if err != nil {
		return nil, err
	}
	r.loop()
	r.finish()
	return &r.res, nil
}

func (r *run) loop() {
	const inf = int64(math.MaxInt64)
	var now int64
	sndDL, rcvDL := inf, inf
	for {
		tHost := inf
		if r.sentIdx < r.cfg.Frames {
			tHost = int64(r.sentIdx) * r.cfg.Gap
		}
		tArr := inf
		if r.head < len(r.wire) {
			tArr = r.wire[r.head].t
		}
		t := min(tHost, tArr, sndDL, rcvDL)
		if t == inf {
			break
		}
		now = max(now, t)
		for r.head < len(r.wire) && r.wire[r.head].t <= now {
			r.rcv.Receive(now, r.wire[r.head].f)
			r.head++
		}
		if r.head == len(r.wire) {
			r.wire, r.head = r.wire[:0], 0
		}
		if tHost <= now {
			r.hostFrame(now)
		}
		sndDL = r.snd.Poll(now)
		r.sendOut(now)
		rcvDL = r.rcv.Poll(now)
		r.recvOut()
	}
	r.res.Duration = now
}

// hostFrame builds host frame sentIdx and hands it to the sender.
func (r *run) hostFrame(now int64) {
	i := r.sentIdx
	n := r.cfg.MinLen
	if r.cfg.MaxLen > n {
		n += r.rng.IntN(r.cfg.MaxLen - n + 1)
	}
	r.lens[i] = uint16(n)
	h, ok := r.a.Alloc(n)
	if !ok {
		panic("fecsim: sender pool exhausted")
	}
	fill(r.a.Bytes(h, n), i)
	r.res.HostBytes += uint64(n)
	r.sentIdx++
	r.snd.Send(now, link.Frame{H: h, Len: n})
	if p := r.cfg.Progress; p != nil && (r.sentIdx&0xffff == 0 || r.sentIdx == r.cfg.Frames) {
		p(r.sentIdx, r.cfg.Frames)
	}
}

// fill writes host frame id's bytes: MACs and EtherType vary with id so
// that recovery must restore them, the payload starts with id.
func fill(b []byte, id int) {
	copy(b[0:6], []byte{2, 0, 0, 0, byte(id >> 8), byte(id)})
	copy(b[6:12], []byte{2, 0, 0, 1, byte(id >> 16), byte(id)})
	et := uint16(0x0800)
	if id%3 == 1 {
		et = 0x86DD
	}
	binary.BigEndian.PutUint16(b[12:], et)
	if len(b) >= 22 {
		binary.BigEndian.PutUint64(b[14:], uint64(id))
	}
	if len(b) > 22 {
		o := (id * 7) & (len(pattern) - 2048)
		copy(b[22:], pattern[o:])
	}
}

// pattern is the payload bytes of host frames (from a fixed seed), copied
// from an offset that varies with the frame.
var pattern = func() []byte {
	b := make([]byte, 8192)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// check reports whether b is host frame id (length included).
func check(b []byte, id int) bool {
	var hdr [22]byte
	fill(hdr[:], id)
	o := (id * 7) & (len(pattern) - 2048)
	return bytes.Equal(b[:22], hdr[:]) && bytes.Equal(b[22:], pattern[o:o+len(b)-22])
}

// sendOut puts the sender's output on the wire and frees its releases.
func (r *run) sendOut(now int64) {
	o := &r.snd.Out
	for _, f := range o.Send {
		b := r.a.Bytes(f.H, f.Len)
		t, _ := seqhdr.FrameType(b)
		drop := r.loss != nil && r.loss.Drop(r.rng, now)
		r.res.WireFrames++
		r.res.WireBytes += uint64(f.Len)
		switch t {
		case seqhdr.TypeData:
			// Copies follow their original; the index of a frame is the
			// number of distinct data frames before it.
			idx := r.dataIndex(b)
			r.res.DataWire++
			if drop {
				r.dropped[idx]++
				r.res.DataDropped++
			}
		case seqhdr.TypeFECParity:
			p, err := fec.ParseParity(b)
			if err != nil {
				panic("fecsim: sender made a bad parity frame: " + err.Error())
			}
			r.groups = append(r.groups, group{first: r.grouped, count: p.Count, parityLost: drop})
			r.grouped += p.Count
		}
		if drop {
			r.res.WireDropped++
			continue
		}
		h, ok := r.b.Alloc(f.Len)
		if !ok {
			panic("fecsim: receiver pool exhausted")
		}
		copy(r.b.Bytes(h, f.Len), b)
		r.wire = append(r.wire, arrival{t: now + r.cfg.Delay, f: link.Frame{H: h, Len: f.Len}})
	}
	for _, f := range o.Free {
		r.a.Free(f.H)
	}
	o.Reset()
}

// dataIndex maps a data frame's sequence number to its host frame index:
// the latest index with that number (frames are sent in order, and a
// number is reused only Space frames later).
func (r *run) dataIndex(b []byte) int {
	h, _ := seqhdr.ParseFrame(b)
	d := int(seqhdr.Diff(h.Seq, r.cfg.InitSeq.Add(r.sentIdx-1)))
	return r.sentIdx - 1 + d
}

// recvOut checks the receiver's deliveries and frees its releases.
func (r *run) recvOut() {
	o := &r.rcv.Out
	for _, f := range o.Deliver {
		b := r.b.Bytes(f.H, f.Len)
		if len(b) < 22 {
			r.res.Corrupt++
			continue
		}
		id := int(binary.BigEndian.Uint64(b[14:]))
		if id < 0 || id >= r.cfg.Frames || int(r.lens[id]) != len(b) {
			r.res.Corrupt++
			continue
		}
		if !check(b, id) {
			r.res.Corrupt++
			continue
		}
		if r.got[id] {
			r.res.Duplicates++
			continue
		}
		r.got[id] = true
		r.res.Delivered++
		if id < r.lastID {
			r.res.OutOfOrder++
		}
		r.lastID = max(r.lastID, id)
	}
	for _, f := range o.Free {
		r.b.Free(f.H)
	}
	o.Reset()
}

// finish computes the oracle and the group outcomes.
func (r *run) finish() {
	res := &r.res
	copies := uint8(max(r.cfg.Copies, 1))
	res.Frames = uint64(r.cfg.Frames)
	res.Lost = res.Frames - res.Delivered
	lostAll := func(i int) bool { return r.dropped[i] >= copies }
	covered := 0
	for _, g := range r.groups {
		lostData, failed := 0, false
		for j := g.first; j < g.first+g.count; j++ {
			if lostAll(j) {
				lostData++
			}
			if !r.got[j] {
				failed = true
			}
		}
		lostAny := lostData
		if g.parityLost {
			lostAny++
		}
		if lostAny >= 2 {
			res.OracleLost += uint64(lostData)
			res.OracleGroupsFail++
		}
		if failed {
			res.GroupsFail++
		}
		covered = g.first + g.count
	}
	res.Groups = uint64(len(r.groups))
	for j := covered; j < r.cfg.Frames; j++ { // no parity covers these
		if lostAll(j) {
			res.OracleLost++
		}
	}
	res.Sender, res.Receiver = r.snd.Stats, r.rcv.Stats
	res.Leaked = r.a.InUse() + r.b.InUse()
	res.PoolErrors = append(r.a.Errors(), r.b.Errors()...)
}

// PredictOverhead is the expected wire overhead (wire bytes per host byte,
// less one) of groups of n (0: no parity) sent k times with frame lengths
// uniform in [minLen, maxLen]: every transmission adds the data header, and
// each group a parity frame as long as its longest frame plus ParityOffset.
func PredictOverhead(n, k, minLen, maxLen int) float64 {
	k = max(k, 1)
	mean := float64(minLen+maxLen) / 2
	per := float64(k)*(mean+seqhdr.MaxOverhead)/mean - 1
	if n == 0 {
		return per
	}
	// E[max of n uniform on the integers minLen..maxLen].
	m, span := 0.0, maxLen-minLen+1
	for v := minLen; v <= maxLen; v++ {
		f := float64(v-minLen+1) / float64(span)
		g := float64(v-minLen) / float64(span)
		m += float64(v) * (math.Pow(f, float64(n)) - math.Pow(g, float64(n)))
	}
	return per + (m+fec.ParityOffset)/(float64(n)*mean)
}
