package dataplane_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/traffic"
	"golang.org/x/sys/unix"
)

// TestCellsEdgeKernelPath: the bundle with --fastpath auto on both edges,
// so that each delivers in-order single-record cells in the kernel
// (cellspipe/cellrx.go). A numbered UDP stream, each frame in a cell of
// its own (no packing), arrives whole, once and in order, most of it
// delivered by sw2's kernel path; the counters count every frame once.
// (Cells sprayed in one burst over the four links reach sw2 out of order
// as often as not: each such cell hands its stream to the worker.)
func TestCellsEdgeKernelPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tb, sw1, sw2 := edgeKernelBed(ctx, t, "lfcr")
	b := &lgBed{tb: tb, sw1: sw1.D, sw2: sw2.D, kernelIn: cellsKernelIn(sw1.D)}
	// Nor ARP: the hosts' neighbour entries must not expire during the
	// stream (h2's probes are answered by h1).
	for _, n := range []struct{ ns, peer, addr string }{{"h1", "h2", "10.0.0.2"}, {"h2", "h1", "10.0.0.1"}} {
		mac := macOf(t, tb.NS(n.peer), "eth0")
		if out, err := netns.Command(ctx, tb.NS(n.ns), "ip", "neigh", "replace", n.addr, "lladdr", net.HardwareAddr(mac).String(),
			"dev", "eth0", "nud", "permanent").CombinedOutput(); err != nil {
			t.Fatalf("%s: neighbour entry: %v\n%s", n.ns, err, out)
		}
	}
	b1, b2 := cellsSnap(t, sw1.D), cellsSnap(t, sw2.D)
	if b2.KernelRx == nil || b1.KernelRx == nil {
		t.Fatalf("no edge kernel path: sw1 %v, sw2 %v", b1.KernelRx, b2.KernelRx)
	}
	// 1 ms apart: each cell alone in its worker's batch at sw1, so that
	// cells seldom overtake each other over the four links (a cell ahead
	// of its turn goes to the worker, and its stream with it).
	r := b.send(t, 5_000, 500, 1_000)
	checkDelivery(t, r, true)
	a1, a2 := cellsSnap(t, sw1.D), cellsSnap(t, sw2.D)
	k, k0 := a2.KernelRx, b2.KernelRx
	delivered := a2.ReasmDelivered - b2.ReasmDelivered
	t.Logf("sw2: %d records delivered, %d by the kernel; %+v", delivered, k.Delivered-k0.Delivered, *k)
	if kd := k.Delivered - k0.Delivered; kd == 0 || kd*2 < delivered {
		t.Errorf("sw2's kernel delivered %d of %d records: want most", kd, delivered)
	}
	if delivered < r.Unique {
		t.Errorf("sw2 counts %d records delivered, h2's sink got %d", delivered, r.Unique)
	}
	if k.StripErr != 0 || k.Bad != 0 || a2.Malformed != 0 {
		t.Errorf("sw2: strip errors %d, invalid %d, malformed %d", k.StripErr, k.Bad, a2.Malformed)
	}
	// Every frame once: the host port's frames against the records, the
	// cells sw1 sent against those sw2 received (the kernel's included).
	if h := a2.Hosts[0].TxFrames - b2.Hosts[0].TxFrames; h != delivered {
		t.Errorf("sw2 host0 sent %d frames, the reassembly delivered %d", h, delivered)
	}
	var sent, got uint64
	for l := range a1.Links {
		sent += a1.Links[l].TxCells - b1.Links[l].TxCells
		got += a2.Links[l].RxCells - b2.Links[l].RxCells
	}
	if got != sent {
		t.Errorf("cells: sw1 sent %d, sw2 received %d", sent, got)
	}
	if a2.Node.Delivered-b2.Node.Delivered != delivered {
		t.Errorf("sw2 node delivered %d, the reassembly %d", a2.Node.Delivered-b2.Node.Delivered, delivered)
	}
}

// TestCellsEdgeKernelPathCPUs: a numbered UDP stream sent from h1's two
// CPUs in turn, one frame on each, 25-40 µs apart: sw1 cuts each frame's
// cell on the CPU that sent it and sw2 receives it there, so nearly every
// cell follows a delivery on the other CPU within the quiet time. sw2's
// kernel delivers it once lf_cell_rx_tc has sent that delivery on (its
// passed word); the stream arrives whole, once and in order, most of
// it delivered by the kernel, few cells handed over for another CPU.
func TestCellsEdgeKernelPathCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tb, _, sw2 := edgeKernelBed(ctx, t, "lfclt")
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	src, dst := macOf(t, h1, "eth0"), macOf(t, h2, "eth0")
	const count = 3000
	var sink *traffic.Sink
	if err := netns.Do(h2, func() (err error) {
		sink, err = traffic.NewSink("eth0", 1, count)
		return err
	}); err != nil {
		t.Fatalf("sink on h2 eth0: %v", err)
	}
	defer sink.Close()
	b2 := cellsSnap(t, sw2.D)
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sink.Run(sctx, 0)
	}()
	var gap time.Duration
	if err := netns.Do(h1, func() error {
		gen, err := traffic.NewGenerator("eth0", traffic.Template{Dst: dst, Src: src, Stream: 1, Size: 200})
		if err != nil {
			return err
		}
		defer gen.Close()
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		defer unix.SchedSetaffinity(0, &old)
		start, last := time.Now(), time.Now()
		for seq := range uint64(count) {
			var one unix.CPUSet
			one.Set(int(seq % 2))
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				return err
			}
			for time.Since(last) < 25*time.Microsecond {
			}
			last = time.Now()
			if gen.Run(ctx, seq, 1, 0, 0) != seq+1 {
				return fmt.Errorf("frame %d not sent", seq)
			}
		}
		gap = time.Since(start) / count
		return nil
	}); err != nil {
		t.Fatalf("generator on h1: %v", err)
	}
	for end := time.Now().Add(5 * time.Second); sink.Received() < count && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	scancel()
	<-done
	r := sink.Report()
	a2 := cellsSnap(t, sw2.D)
	k, k0 := a2.KernelRx, b2.KernelRx
	if k == nil || k0 == nil {
		t.Fatal("sw2: no egress kernel path")
	}
	kd, cpu := k.Delivered-k0.Delivered, k.HandoverCPU-k0.HandoverCPU
	why := fmt.Sprintf("hand-overs %d (order %d, record %d, source %d, another CPU %d), gives %d, refused %d, cells behind the worker's point %d",
		k.Handovers-k0.Handovers, k.HandoverOrder-k0.HandoverOrder, k.HandoverRecord-k0.HandoverRecord, k.HandoverSource-k0.HandoverSource, cpu,
		k.Gives-k0.Gives, k.Refused-k0.Refused, k.GoOwned-k0.GoOwned)
	t.Logf("%d frames, one every %v from CPUs 0 and 1 in turn; h2: %+v; sw2's kernel delivered %d; %s", count, gap, r, kd, why)
	if r.Unique != count || r.Duplicates != 0 || r.OutOfOrder != 0 || r.Other != 0 {
		t.Errorf("h2 got %+v: want %d frames once each, in order", r, count)
	}
	// Without the passed word nearly every cell is handed over for another
	// CPU (1379 of 3000). A hand-over for any other reason leaves the
	// stream's frames to the worker until it gives the point back, which a
	// worker stalled for tens of milliseconds on a loaded machine does
	// late (at one frame in 70 µs, 20 ms is ~300 frames): most, not nearly
	// all, is what the kernel's share can promise.
	if cpu > count/20 || kd < count/2 {
		t.Errorf("sw2's kernel delivered %d of %d, %d hand-overs for another CPU: want few for another CPU and most delivered by the kernel (%s)", kd, count, cpu, why)
	}
}

// edgeKernelBed is the bundle with two cells edges whose edge kernel paths
// are on (no packing), answering pings h1 → h2, h1 without IPv6 (its own
// multicast, neighbour discovery and MLD, would join the streams sw1 takes
// from it).
func edgeKernelBed(ctx context.Context, t *testing.T, prefix string) (*netns.Testbed, *dataplane.RunningSwitch, *dataplane.RunningSwitch) {
	t.Helper()
	tb := netns.TestUp(t, prefix, "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	workers(t, 2)
	node := func(id uint16) dataplane.Config {
		c := cellsNode(id, nil, bundleLinks, cellspipe.Config{NoPacking: true})
		c.FastPath = dataplane.FastPathAuto
		return c
	}
	sw1, sw2 := dataplane.StartBoth(t, tb.NS("sw1"), node(1), tb.NS("sw2"), node(2))
	if out, err := netns.Command(ctx, tb.NS("h1"), "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1").CombinedOutput(); err != nil {
		t.Fatalf("h1: disable IPv6: %v\n%s", err, out)
	}
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2: %v", err)
	}
	pings(t, tb.NS("h1"), "10.0.0.2", 20)
	return tb, sw1, sw2
}
