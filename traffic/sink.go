package traffic

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/xdp"
)

// Report is what a Sink saw of one stream.
type Report struct {
	Received   uint64 `json:"received"`     // test frames of the stream, duplicates included
	Unique     uint64 `json:"unique"`       // distinct sequence numbers
	Duplicates uint64 `json:"duplicates"`   // frames whose number was seen before
	OutOfOrder uint64 `json:"out_of_order"` // frames numbered below the highest seen before them
	Missing    uint64 `json:"missing"`      // numbers in [0, expected) never seen
	Other      uint64 `json:"other"`        // frames that were not test frames of the stream
}

// Sink receives test frames on every queue of an interface through AF_XDP
// (it attaches linkfabric's port program to redirect them) and checks their
// sequence numbers against a bitmap of the expected range.
type Sink struct {
	stream   uint32
	expected uint64
	seen     []uint64 // bitmap over [0, expected)
	max      uint64
	any      bool
	rep      Report
	recv     atomic.Uint64

	port  *bpf.PortProgram
	umem  *xdp.Umem
	socks []*xdp.Socket
	descs []xdp.Desc
	addrs []uint64
	free  *xdp.FreeList
}

// NewSink attaches to ifname (calling thread's namespace) and expects frames
// of stream numbered 0..expected-1.
func NewSink(ifname string, stream uint32, expected uint64) (_ *Sink, err error) {
	s := newChecker(stream, expected)
	s.descs, s.addrs = make([]xdp.Desc, 64), make([]uint64, 64)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	return s.open(ifname)
}

// newChecker returns a Sink that only checks frames (no sockets yet).
func newChecker(stream uint32, expected uint64) *Sink {
	return &Sink{stream: stream, expected: expected, seen: make([]uint64, (expected+63)/64)}
}

func (s *Sink) open(ifname string) (_ *Sink, err error) {
	n, err := xdp.QueueCount(ifname)
	if err != nil {
		return nil, err
	}
	if s.port, err = bpf.AttachPort(ifname, bpf.PortOptions{Queues: max(n, 1)}); err != nil {
		return nil, err
	}
	if s.umem, err = xdp.NewUmem(xdp.UmemConfig{FrameSize: 4096, FrameCount: 8192}); err != nil {
		return nil, err
	}
	s.free = s.umem.NewFreeList()
	for q := 0; q < max(n, 1); q++ {
		sock, err := s.umem.Open(ifname, q, xdp.SocketConfig{})
		if err != nil {
			return nil, err
		}
		s.socks = append(s.socks, sock)
		if err := s.port.RegisterXSK(q, sock.FD()); err != nil {
			return nil, err
		}
		s.refill(sock)
	}
	return s, nil
}

// Port is the XDP program the sink attached (its counters include every frame).
func (s *Sink) Port() *bpf.PortProgram { return s.port }

// Received is how many test frames of the stream arrived so far (safe while Run runs).
func (s *Sink) Received() uint64 { return s.recv.Load() }

// Run receives until ctx is done, or until idle passes with no frame after
// at least one arrived (0: only ctx ends it).
func (s *Sink) Run(ctx context.Context, idle time.Duration) {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	poller := xdp.NewPoller(s.socks...)
	last := time.Now()
	for !stop.Load() {
		got := 0
		for _, sock := range s.socks {
			n := sock.Receive(s.descs)
			for _, d := range s.descs[:n] {
				s.account(s.umem.Bytes(d.Addr, d.Len))
				s.free.Push(s.umem.FrameBase(d.Addr))
			}
			got += n
			s.refill(sock)
		}
		if got > 0 {
			last = time.Now()
			continue
		}
		if idle > 0 && s.any && time.Since(last) > idle {
			return
		}
		poller.Wait(10 * time.Millisecond)
	}
}

func (s *Sink) account(b []byte) {
	stream, seq, ok := Parse(b)
	if !ok || stream != s.stream {
		s.rep.Other++
		return
	}
	s.rep.Received++
	s.recv.Add(1)
	if s.any && seq < s.max {
		s.rep.OutOfOrder++
	}
	if !s.any || seq > s.max {
		s.max = seq
	}
	s.any = true
	if seq >= s.expected {
		s.rep.Other++ // beyond the expected range
		return
	}
	w, bit := seq/64, uint64(1)<<(seq%64)
	if s.seen[w]&bit != 0 {
		s.rep.Duplicates++
		return
	}
	s.seen[w] |= bit
	s.rep.Unique++
}

func (s *Sink) refill(sock *xdp.Socket) {
	want := min(sock.FillFree(), len(s.addrs))
	n := s.free.PopN(s.addrs[:want])
	sock.Fill(s.addrs[:n])
}

// Report returns what was seen; call it after Run returned.
func (s *Sink) Report() Report {
	r := s.rep
	r.Missing = s.expected - r.Unique
	return r
}

// Drops is how many frames the kernel dropped on the way into the sink's
// sockets (RX ring full, no fill buffer, invalid), from XDP_STATISTICS.
func (s *Sink) Drops() (uint64, error) {
	var n uint64
	for _, sock := range s.socks {
		st, err := sock.Stats()
		if err != nil {
			return 0, err
		}
		// A frame dropped for want of a fill buffer counts in both
		// RxDropped and RxFillRingEmptyDescs: count it once.
		n += st.RxDropped + st.RxRingFull
	}
	return n, nil
}

// Close detaches the program and releases the sockets.
func (s *Sink) Close() error {
	for _, sock := range s.socks {
		sock.Close()
	}
	if s.port != nil {
		s.port.Close()
	}
	if s.umem != nil {
		s.umem.Close()
	}
	return nil
}
