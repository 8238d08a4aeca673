package bpf

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/linkcrc"
	"github.com/linkfabric/linkfabric/seqhdr"
	"golang.org/x/sys/unix"
)

// The catch-up queue (lgrxqueue.go): frames judged by the port program
// with BPF_PROG_TEST_RUN as if they came from the link port (the run's
// ingress is the port's interface), drained with live frames into a veth
// whose peer captures them.

// xdpMD is struct xdp_md as BPF_PROG_TEST_RUN takes it (ctx_in).
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// queueNet is a port program (loaded, not attached) whose port is lfqa of
// a fresh veth pair lfqa <-> lfqb, its forward port lfqa, with lg_rx and a
// catch-up queue of slots slots on, and a packet socket capturing what
// arrives on lfqb.
type queueNet struct {
	*vethNet
	p   *PortProgram
	s   *LGRx
	d   *LGDrainer
	cap int
}

func newQueueNet(t *testing.T, slots int, m linkcrc.Integrity) *queueNet {
	t.Helper()
	n := newVethNetNamed(t, "lfbq", "lfqa", "lfqb", 0)
	prepare()
	spec, err := loadPort()
	if err != nil {
		t.Fatal(err)
	}
	if err := lgRxQueueSpec(spec, PortOptions{LGRxQueueSlots: slots}); err != nil {
		t.Fatal(err)
	}
	p := &PortProgram{ifname: "lfqa", ifindex: n.a.Attrs().Index}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		t.Fatal(loadErr("port", err))
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := p.SetForwardPort(p.ifindex); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLGRx(true); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLGRxIntegrity(m); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLGRxQueue(true); err != nil {
		t.Fatal(err)
	}
	q := &queueNet{vethNet: n, p: p}
	if q.s, err = p.LGRx(); err != nil {
		t.Fatal(err)
	}
	if q.d, err = p.Drainer(); err != nil {
		t.Fatal(err)
	}
	// A veth accepts redirected frames only with NAPI on at its peer.
	if out, err := exec.Command("ip", "netns", "exec", n.name, "ethtool", "-K", "lfqb", "gro", "on").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -K lfqb gro on: %v: %s", err, out)
	}
	if q.cap, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK, int(htons(unix.ETH_P_ALL))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(q.cap) })
	if err := unix.Bind(q.cap, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: n.b.Attrs().Index}); err != nil {
		t.Fatal(err)
	}
	return q
}

// judge runs the program on frame as if lfqa had received it.
func (q *queueNet) judge(frame []byte) uint32 {
	q.t.Helper()
	opts := ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+64),
		Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(q.p.ifindex)}}
	ret, err := q.p.Program().Run(&opts)
	if err != nil {
		q.t.Fatalf("test run on %d bytes: %v", len(frame), err)
	}
	return ret
}

// captured returns the frames lfqb received, waiting until none come.
func (q *queueNet) captured() [][]byte {
	var out [][]byte
	buf := make([]byte, 4096)
	for quiet := 0; quiet < 10; {
		n, _, err := unix.Recvfrom(q.cap, buf, 0)
		if err != nil {
			quiet++
			time.Sleep(2 * time.Millisecond)
			continue
		}
		quiet = 0
		out = append(out, bytes.Clone(buf[:n]))
	}
	return out
}

func TestLGRxQueueStartsQueuesAndDrains(t *testing.T) {
	for _, m := range []linkcrc.Integrity{linkcrc.Off, linkcrc.Csum} {
		t.Run(m.String(), func(t *testing.T) {
			q := newQueueNet(t, 8, m)
			seal := func(f []byte) []byte {
				if m == linkcrc.Off {
					return f
				}
				b := append(bytes.Clone(f), 0, 0, 0, 0)
				n, ok := m.Seal(b, len(f))
				if !ok {
					t.Fatal("seal")
				}
				return b[:n]
			}
			var want [][]byte
			frame := func(seq seqhdr.Seq, size int) []byte {
				f := lgData(t, seq, true, seqhdr.Seq(seq-1), size)
				want = append(want, stripped(t, f))
				return seal(f)
			}

			// Not owned, no REQ: every frame is Go's, nothing moves.
			q.s.Point().Store(7)
			if ret := q.judge(frame(7, 60)); ret != xdpPass || q.s.Point().Load() != 7 {
				t.Fatalf("no REQ: verdict %d, point %#x; want XDP_PASS, 0x7", ret, q.s.Point().Load())
			}
			want = want[:0]

			// REQ: the next data frame starts queue mode and is queued.
			q.s.Point().Store(LGReq | 3)
			for i, size := range []int{60, 1400, 0} {
				if ret := q.judge(frame(seqhdr.Seq(7+i), size)); ret != xdpDrop {
					t.Fatalf("frame %d: verdict %d, want XDP_DROP (queued)", 7+i, ret)
				}
			}
			if got := q.s.Point().Load(); got != LGOwned|LGQueue|10 {
				t.Fatalf("point %#x after three queued, want OWNED|QUEUE|10", got)
			}
			if q.s.QStart() != 7 || q.s.QHead() != 7 {
				t.Fatalf("qstart %d, qhead %d; want 7, 7", q.s.QStart(), q.s.QHead())
			}
			if c := q.s.QueueCounters(); c.Queued != 3 || c.Starts != 1 {
				t.Fatalf("counters %+v: want 3 queued, 1 start", c)
			}
			if got := q.s.PeerAck().Load(); got != LGAckValid|8 {
				t.Errorf("peer_ack %#x, want VALID|8 (the last queued frame's ACK)", got)
			}

			// Drain more runs than there are frames: three delivered, in order, as stripped.
			n, err := q.d.Drain(5)
			if err != nil || n != 3 {
				t.Fatalf("Drain(5) = %d, %v; want 3", n, err)
			}
			if q.s.QHead() != 10 {
				t.Fatalf("qhead %d after the drain, want 10", q.s.QHead())
			}
			got := q.captured()
			if len(got) != len(want) {
				t.Fatalf("lfqb got %d frames, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("drained frame %d: %d bytes % x..., want %d bytes % x...", i, len(got[i]), got[i][:min(24, len(got[i]))], len(want[i]), want[i][:min(24, len(want[i]))])
				}
			}
			if c := q.s.QueueCounters(); c.Drained != 3 || c.DrainIdle != 2 || c.DrainErr != 0 {
				t.Errorf("counters %+v: want 3 drained, 2 idle runs", c)
			}

			// A hole: the point goes to Go with QUEUE kept, the tail unchanged.
			want = want[:0]
			if ret := q.judge(frame(12, 60)); ret != xdpPass {
				t.Fatalf("hole: verdict %d, want XDP_PASS (to Go)", ret)
			}
			if got := q.s.Point().Load(); got != LGQueue|10 {
				t.Fatalf("point %#x after a hole, want QUEUE|10 (not owned)", got)
			}
			// Not owned, QUEUE, no REQ: every frame is Go's.
			if ret := q.judge(frame(10, 60)); ret != xdpPass || q.s.Point().Load() != LGQueue|10 {
				t.Fatalf("after the hand-over: verdict %d, point %#x", ret, q.s.Point().Load())
			}
			if n, err := q.d.Drain(2); err != nil || n != 0 {
				t.Fatalf("Drain of an empty queue = %d, %v", n, err)
			}
		})
	}
}

func TestLGRxQueueFull(t *testing.T) {
	q := newQueueNet(t, 4, linkcrc.Off)
	q.s.Point().Store(LGReq)
	for i := 0; i < 4; i++ {
		if ret := q.judge(lgData(t, seqhdr.Seq(100+i), false, 0, 40)); ret != xdpDrop {
			t.Fatalf("frame %d: verdict %d, want queued", 100+i, ret)
		}
	}
	if ret := q.judge(lgData(t, 104, false, 0, 40)); ret != xdpPass {
		t.Fatalf("fifth frame into four slots: verdict %d, want XDP_PASS (to Go)", ret)
	}
	if got, c := q.s.Point().Load(), q.s.QueueCounters(); got != LGQueue|104 || c.Full != 1 {
		t.Fatalf("point %#x, counters %+v; want QUEUE|104 and one full", got, c)
	}
	if n, err := q.d.Drain(8); err != nil || n != 4 {
		t.Fatalf("Drain = %d, %v; want the four", n, err)
	}
	if got := len(q.captured()); got != 4 {
		t.Fatalf("lfqb got %d frames, want 4", got)
	}
}

// A retransmitted copy, a control frame and a frame with fragments never
// start queue mode; REQ stays for the next data frame.
func TestLGRxQueueIneligible(t *testing.T) {
	q := newQueueNet(t, 4, linkcrc.Off)
	q.s.Point().Store(LGReq | 5)
	retx := lgData(t, 5, false, 0, 40)
	retx[15] |= 0x01 // Retx
	for name, f := range map[string][]byte{
		"retx":  retx,
		"dummy": lgControl(t, seqhdr.Header{Type: seqhdr.TypeDummy, Seq: 5}),
	} {
		if ret := q.judge(f); ret != xdpPass || q.s.Point().Load() != LGReq|5 {
			t.Errorf("%s: verdict %d, point %#x; want XDP_PASS, REQ|5 untouched", name, ret, q.s.Point().Load())
		}
	}
	if c := q.s.QueueCounters(); c.Starts != 0 || c.Queued != 0 {
		t.Errorf("counters %+v, want nothing started", c)
	}
}

// In queue mode the send path piggybacks QAck (the core's ACK while it
// finishes before the queue), not the queue's tail; with QAck 0, or
// without queue mode, the point's serial − 1.
func TestLGTxPiggybacksQAck(t *testing.T) {
	p, tx, rx := loadLGTx(t)
	if err := p.SetLGTxAck(true); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	tx.Limit().Store(LGLimitValid | 20)
	for i, c := range []struct {
		point, qack, want uint64
	}{
		{LGOwned | LGQueue | 300, LGAckValid | 120, 120},
		{LGQueue | 300, LGAckValid | 121, 121}, // given back to Go, queue not yet delivered
		{LGOwned | LGQueue | 300, 0, 299},
		{LGOwned | 300, LGAckValid | 122, 299},
		{LGReq | 130, LGAckValid | 123, 129},
	} {
		rx.Point().Store(c.point)
		rx.QAck().Store(c.qack)
		tx.State().Store(LGOwned | uint64(5+i))
		if ret, _ := runLG(t, p, lgHostFrame(rng, 100, 0x0800)); ret != xdpRedirect {
			t.Fatalf("case %d: verdict %d, want XDP_REDIRECT", i, ret)
		}
		if got := tx.PiggyAck().Load(); got != LGAckValid|c.want {
			t.Errorf("case %d (point %#x, qack %#x): piggybacked %#x, want %d", i, c.point, c.qack, got, c.want)
		}
	}
}

// A frame whose integrity trailer fails never starts queue mode nor joins
// the queue: it goes to Go with the point untouched (Go counts and drops
// it; the next frame, past the hole it leaves, gives the point back).
func TestLGRxQueueCorruptFrame(t *testing.T) {
	q := newQueueNet(t, 8, linkcrc.Csum)
	seal := func(f []byte) []byte {
		b := append(bytes.Clone(f), 0, 0, 0, 0)
		n, ok := linkcrc.Csum.Seal(b, len(f))
		if !ok {
			t.Fatal("seal")
		}
		return b[:n]
	}
	bad := seal(lgData(t, 40, false, 0, 100))
	bad[30] ^= 0x10
	q.s.Point().Store(LGReq | 40)
	if ret := q.judge(bad); ret != xdpPass || q.s.Point().Load() != LGReq|40 {
		t.Fatalf("corrupt frame with REQ: verdict %d, point %#x; want XDP_PASS, REQ|40 untouched", ret, q.s.Point().Load())
	}
	if ret := q.judge(seal(lgData(t, 40, false, 0, 100))); ret != xdpDrop {
		t.Fatalf("good frame 40: verdict %d, want queued", ret)
	}
	bad = seal(lgData(t, 41, false, 0, 100))
	bad[40] ^= 0x01
	if ret := q.judge(bad); ret != xdpPass || q.s.Point().Load() != LGOwned|LGQueue|41 {
		t.Fatalf("corrupt frame in queue mode: verdict %d, point %#x; want XDP_PASS, OWNED|QUEUE|41 untouched", ret, q.s.Point().Load())
	}
	if c := q.s.QueueCounters(); c.Queued != 1 || c.Starts != 1 {
		t.Errorf("counters %+v: want one start, one frame queued", c)
	}
}
