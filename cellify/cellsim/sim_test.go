package cellsim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/cellify"
)

// The heap runs events in time order, and in scheduling order at equal
// times.
func TestEventOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h eventHeap
	var seq uint64
	for range 5000 {
		seq++
		h.push(event{at: int64(rng.IntN(100)), seq: seq})
	}
	last := event{at: -1}
	for len(h) > 0 {
		e := h.pop()
		if e.at < last.at || e.at == last.at && e.seq < last.seq {
			t.Fatalf("(%d, %d) after (%d, %d)", e.at, e.seq, last.at, last.seq)
		}
		last = e
	}
}

func TestFifo(t *testing.T) {
	var q fifo[int]
	var ref []int
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10000 {
		switch rng.IntN(3) {
		case 0:
			q.push(i)
			ref = append(ref, i)
		case 1:
			q.pushFront(i)
			ref = append([]int{i}, ref...)
		default:
			if len(ref) > 0 {
				if v := q.pop(); v != ref[0] {
					t.Fatalf("pop %d, want %d", v, ref[0])
				}
				ref = ref[1:]
			}
		}
		if q.len() != len(ref) {
			t.Fatalf("len %d, want %d", q.len(), len(ref))
		}
	}
}

// A run is a function of its seed.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) []uint64 {
		s := New(Config{Seed: seed})
		tp := Bundle(s, 4, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		s.AddFlow(FlowConfig{Src: tp.Hosts[0], Dst: tp.Hosts[1], Size: 60, SizeMax: 1500, Rate: 0.9e9, Poisson: true, Stop: s.Now + 5*ms})
		s.RunFor(6 * ms)
		var v []uint64
		for _, l := range tp.Links {
			v = append(v, l.AB.Stats.TxCellBytes, l.AB.Stats.TxCells)
		}
		return append(v, s.Events)
	}
	a, b, c := run(5), run(5), run(6)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 5 twice: %v vs %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("seeds 5 and 6 alike: %v", a)
	}
}

// One frame through a bundle of one link takes the host port's
// serialization, the cell's on the link plus the delay, and the egress
// port's (a credit round trip first: the request and grant are 60-byte
// frames).
func TestLinkTiming(t *testing.T) {
	s := New(Config{Seed: 1})
	lc := LinkConfig{Rate: 1e9, Delay: 7 * us}
	tp := Bundle(s, 1, lc, HostConfig{Rate: 1e9})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t0 := s.Now
	f := s.AddFlow(FlowConfig{Src: tp.Hosts[0], Dst: tp.Hosts[1], Size: 1000, Rate: 1e6, Stop: t0 + 1})
	s.RunFor(ms)
	if f.Stats.Recv != 1 {
		t.Fatalf("received %d", f.Stats.Recv)
	}
	ser := func(n int) int64 { return s.serNs(n, 1e9) }
	cell := cellify.CellFrameLen(1000 + cellify.RecordHeaderLen + 1)
	ctrl := cellify.CreditFrameLen(1)
	want := ser(1000) + 2*(ser(ctrl)+lc.Delay) + ser(cell) + lc.Delay + ser(1000)
	if got := f.Stats.FirstRecv - t0; got != want {
		t.Fatalf("first frame after %d ns, want %d", got, want)
	}
}

// A link slower than the offer drops at its tail, counted; no frame leaks;
// LinkGuardian on a lossy link loses nothing and retransmits about the
// loss rate.
func TestTailDropAndLG(t *testing.T) {
	s := New(Config{Seed: 2, Node: func(_ *Node, c *cellify.NodeConfig) { c.Credits = false }})
	tp := Bundle(s, 2, LinkConfig{Rate: 200e6, Delay: us, Buffer: 16 << 10}, HostConfig{Rate: hostRate})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	f := s.AddFlow(FlowConfig{Src: tp.Hosts[0], Dst: tp.Hosts[1], Size: 1000, Rate: 0.8e9, Stop: s.Now + 5*ms})
	s.RunFor(10 * ms)
	tail := tp.Links[0].AB.Stats.TailDrops + tp.Links[1].AB.Stats.TailDrops
	if tail == 0 || f.Lost() == 0 {
		t.Fatalf("no tail drop at 2× the links' rate: %d drops, %d lost", tail, f.Lost())
	}
	if err := s.Leaked("test"); err != nil {
		t.Fatal(err)
	}

	s = New(Config{Seed: 3})
	tp = Bundle(s, 2, LinkConfig{Rate: linkRate, Delay: 20 * us, Loss: Bernoulli{P: 0.1}, LG: true}, HostConfig{Rate: hostRate})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	f = s.AddFlow(FlowConfig{Src: tp.Hosts[0], Dst: tp.Hosts[1], Size: 1000, Rate: 0.3e9, Stop: s.Now + 10*ms})
	s.RunFor(15 * ms)
	var sent, retx uint64
	for _, l := range tp.Links {
		sent += l.AB.Stats.TxFrames
		retx += l.AB.Stats.Retx
	}
	if f.Lost() != 0 || f.Stats.Reordered != 0 || f.Stats.Dup != 0 {
		t.Fatalf("over LG at 10%% loss: %+v", f.Stats)
	}
	if r := float64(retx) / float64(sent); r < 0.08 || r > 0.12 {
		t.Fatalf("retransmitted %.3f of the frames at 10%% loss", r)
	}
	if err := s.Leaked("test"); err != nil {
		t.Fatal(err)
	}
}

// A window flow keeps at most its window unacknowledged: on a fast path its
// rate is about window / round trip, where the round trip is the credit
// request's and grant's way (a delay each), the cells' (one) and the
// acknowledgement's.
func TestWindowFlow(t *testing.T) {
	s := New(Config{Seed: 4})
	tp := Bundle(s, 4, LinkConfig{Rate: 10e9, Delay: 50 * us}, HostConfig{Rate: 10e9})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	const window = 30_000
	f := s.AddFlow(FlowConfig{Src: tp.Hosts[0], Dst: tp.Hosts[1], Size: 1500, Window: window, AckDelay: 100 * us, Stop: s.Now + 20*ms})
	s.RunFor(25 * ms)
	rtt := float64(3*50*us + 100*us + 2*us) // and some serialization
	want := window / rtt * 1e9              // bytes/s
	got := float64(f.Stats.RecvBytes) / 20e-3
	if got < 0.7*want || got > 1.05*want || f.Lost() != 0 {
		t.Fatalf("window flow: %.3g B/s, want about %.3g; %+v", got, want, f.Stats)
	}
}
