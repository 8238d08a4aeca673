package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	lfnetns "github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The integration tests need root. Each one builds a network namespace named
// lfxtest<pid>-<n> holding veth pairs named lfx*, runs inside it on a locked OS
// thread, and removes everything in t.Cleanup.

const testEtherType = 0x88B5 // IEEE local experimental

var nsCounter atomic.Int32

type testNS struct {
	t    *testing.T
	name string
	h    *netlink.Handle
}

// needRoot skips the test unless it runs as root, and with -short.
func needRoot(t *testing.T) {
	t.Helper()
	lfnetns.RequireRoot(t)
}

// removeStaleNamespaces deletes lfxtest namespaces left by test processes that
// no longer exist (a run killed before its cleanup).
func removeStaleNamespaces() {
	m, _ := filepath.Glob("/var/run/netns/lfxtest*")
	for _, p := range m {
		rest := strings.TrimPrefix(filepath.Base(p), "lfxtest")
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		_ = netns.DeleteNamed(filepath.Base(p))
	}
}

// newTestNS locks the test goroutine to its OS thread and moves that thread
// into a fresh named namespace until the test ends.
func newTestNS(t *testing.T) *testNS {
	t.Helper()
	return newTestNSNamed(t, "lfxtest")
}

// newTestNSNamed is newTestNS with the namespace's base name given.
func newTestNSNamed(t *testing.T, base string) *testNS {
	t.Helper()
	needRoot(t)
	removeStaleNamespaces()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("get current netns: %v", err)
	}
	name := fmt.Sprintf("%s%d-%d", base, os.Getpid(), nsCounter.Add(1))
	created := false
	t.Cleanup(func() {
		if err := netns.Set(orig); err != nil {
			// Leave the thread locked: it dies with the goroutine instead of
			// going back to the scheduler in the wrong namespace.
			t.Errorf("return to original netns: %v", err)
		} else {
			runtime.UnlockOSThread()
		}
		orig.Close()
		if created {
			if err := netns.DeleteNamed(name); err != nil {
				t.Errorf("delete netns %s: %v", name, err)
			}
		}
	})
	ns, err := netns.NewNamed(name)
	if err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	created = true
	h, err := netlink.NewHandleAt(ns)
	ns.Close()
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", name, err)
	}
	t.Cleanup(h.Close)
	lo, err := h.LinkByName("lo")
	if err == nil {
		_ = h.LinkSetUp(lo)
	}
	return &testNS{t: t, name: name, h: h}
}

// veth creates the pair a<->b with the given number of queues, both up, and
// returns their interfaces.
func (n *testNS) veth(a, b string, queues int) (net.Interface, net.Interface) {
	t := n.t
	t.Helper()
	v := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: a, NumTxQueues: queues, NumRxQueues: queues},
		PeerName:  b, PeerNumTxQueues: uint32(queues), PeerNumRxQueues: uint32(queues),
	}
	if err := n.h.LinkAdd(v); err != nil {
		t.Fatalf("add veth %s-%s in %s: %v", a, b, n.name, err)
	}
	t.Cleanup(func() {
		if l, err := n.h.LinkByName(a); err == nil {
			_ = n.h.LinkDel(l)
		}
	})
	var out [2]net.Interface
	for i, name := range []string{a, b} {
		l, err := n.h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.h.LinkSetUp(l); err != nil {
			t.Fatalf("set %s up: %v", name, err)
		}
		out[i] = net.Interface{Index: l.Attrs().Index, Name: name, HardwareAddr: l.Attrs().HardwareAddr}
	}
	return out[0], out[1]
}

// attachRedirect loads "return bpf_redirect_map(&xsks, ctx->rx_queue_index,
// XDP_PASS)" in native mode on ifindex and returns the XSKMAP.
func attachRedirect(t *testing.T, ifindex int) *ebpf.Map {
	t.Helper()
	return attachRedirectFlags(t, ifindex, 0)
}

// attachRedirectFlags is attachRedirect loading the program with flags
// (BPF_F_XDP_HAS_FRAGS: multi-buffer frames, any MTU on veth).
func attachRedirectFlags(t *testing.T, ifindex int, flags uint32) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "lfx_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 16})
	if err != nil {
		t.Fatalf("create XSKMAP: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:    "lfx_redirect",
		Type:    ebpf.XDP,
		License: "GPL",
		Flags:   flags,
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.Word), // r2 = ctx->rx_queue_index
			asm.LoadMapPtr(asm.R1, m.FD()),            // r1 = &xsks
			asm.Mov.Imm(asm.R3, 2),                    // r3 = XDP_PASS (no socket in slot)
			asm.FnRedirectMap.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load XDP program: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	if err != nil {
		t.Fatalf("attach XDP to ifindex %d: %v", ifindex, err)
	}
	t.Cleanup(func() { l.Close() })
	return m
}

// packetSock is an AF_PACKET socket on the far end of a veth, for testEtherType.
type packetSock struct {
	t  *testing.T
	fd int
}

func openPacket(t *testing.T, ifindex int) *packetSock {
	t.Helper()
	proto := int(htons(testEtherType))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(testEtherType), Ifindex: ifindex}); err != nil {
		t.Fatalf("bind AF_PACKET: %v", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	return &packetSock{t: t, fd: fd}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *packetSock) send(frame []byte) {
	p.t.Helper()
	if _, err := unix.Write(p.fd, frame); err != nil {
		p.t.Fatalf("AF_PACKET send: %v", err)
	}
}

// recv returns the next frame or nil after timeout.
func (p *packetSock) recv(timeout time.Duration) []byte {
	p.t.Helper()
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(timeout/time.Millisecond))
	if err != nil && err != unix.EINTR {
		p.t.Fatalf("poll AF_PACKET: %v", err)
	}
	if n <= 0 {
		return nil
	}
	buf := make([]byte, 1<<16)
	k, err := unix.Read(p.fd, buf)
	if err != nil {
		p.t.Fatalf("AF_PACKET recv: %v", err)
	}
	return buf[:k]
}

// testFrame builds an Ethernet frame of length n carrying seq and a pattern.
func testFrame(dst, src net.HardwareAddr, seq uint32, n int) []byte {
	f := make([]byte, n)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:14], testEtherType)
	binary.BigEndian.PutUint32(f[14:18], seq)
	for i := 18; i < n; i++ {
		f[i] = byte(int(seq)*7 + i)
	}
	return f
}

// frameSeq returns the sequence number of a test frame, ok false for others
// (IPv6 neighbour discovery and the like also reach the socket).
func frameSeq(b []byte) (uint32, bool) {
	if len(b) < 18 || binary.BigEndian.Uint16(b[12:14]) != testEtherType {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[14:18]), true
}

func frameLen(seq uint32) int { return 60 + int(seq*97)%1400 }

func TestIntegrationReceiveTransmit(t *testing.T) {
	n := newTestNS(t)
	a, b := n.veth("lfx0a", "lfx0b", 1)
	xsks := attachRedirect(t, a.Index)

	u, err := NewUmem(UmemConfig{FrameSize: 2048, FrameCount: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	s, err := u.Open("lfx0a", 0, SocketConfig{RxSize: 512, TxSize: 512, FillSize: 512, CompletionSize: 512, NeedWakeup: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != ModeCopy {
		t.Errorf("mode on veth = %s, want copy (zero-copy must have fallen back)", s.Mode())
	}
	if opts, err := s.Options(); err != nil || opts&unix.XDP_OPTIONS_ZEROCOPY != 0 {
		t.Errorf("XDP_OPTIONS = %#x, %v; want no zero-copy bit", opts, err)
	}
	if s.Shared() || !s.NeedWakeup() {
		t.Errorf("shared=%v needWakeup=%v, want false true", s.Shared(), s.NeedWakeup())
	}
	if err := xsks.Put(uint32(0), uint32(s.FD())); err != nil {
		t.Fatalf("put socket in XSKMAP: %v", err)
	}
	free := u.NewFreeList()
	fill := make([]uint64, 256)
	free.PopN(fill)
	if k := s.Fill(fill); k != 256 {
		t.Fatalf("Fill took %d of 256", k)
	}

	peer := openPacket(t, b.Index)

	// RX: frames sent on the peer arrive on the socket, byte for byte.
	const nrx = 200
	for seq := uint32(0); seq < nrx; seq++ {
		peer.send(testFrame(a.HardwareAddr, b.HardwareAddr, seq, frameLen(seq)))
	}
	poller := NewPoller(s)
	descs := make([]Desc, 64)
	next := uint32(0)
	deadline := time.Now().Add(5 * time.Second)
	for next < nrx && time.Now().Before(deadline) {
		ready, err := poller.Wait(100 * time.Millisecond)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(ready) == 1 && !poller.Readable(0) {
			t.Fatalf("poller reported socket without POLLIN")
		}
		k := s.Receive(descs)
		for _, d := range descs[:k] {
			got := u.Bytes(d.Addr, d.Len)
			if seq, ok := frameSeq(got); ok {
				if seq != next {
					t.Fatalf("received seq %d, want %d (reordered or lost)", seq, next)
				}
				want := testFrame(a.HardwareAddr, b.HardwareAddr, seq, frameLen(seq))
				if !bytes.Equal(got, want) {
					t.Fatalf("frame %d: bytes differ (len %d want %d)", seq, len(got), len(want))
				}
				if d.Addr-u.FrameBase(d.Addr) != uint64(u.DataOffset()) {
					t.Fatalf("frame %d at offset %d in its frame, want DataOffset %d", seq, d.Addr-u.FrameBase(d.Addr), u.DataOffset())
				}
				next++
			}
			fill[0] = u.FrameBase(d.Addr)
			if s.Fill(fill[:1]) != 1 {
				t.Fatal("fill ring full while returning a frame")
			}
		}
	}
	if next != nrx {
		st, _ := s.Stats()
		t.Fatalf("received %d of %d frames; stats %+v", next, nrx, st)
	}

	// TX: 300 frames in one Transmit+Kick. Copy mode sends at most 32 per
	// sendto, so a single Kick must loop to drain the ring.
	const ntx = 300
	txd := make([]Desc, ntx)
	for i := range txd {
		addr, ok := free.Pop()
		if !ok {
			t.Fatal("free list exhausted")
		}
		addr += uint64(u.DataOffset())
		f := testFrame(b.HardwareAddr, a.HardwareAddr, uint32(i), frameLen(uint32(i)))
		copy(u.Frame(addr), f)
		txd[i] = Desc{Addr: addr, Len: uint32(len(f))}
	}
	if k := s.Transmit(txd); k != ntx {
		t.Fatalf("Transmit took %d of %d", k, ntx)
	}
	if err := s.Kick(); err != nil {
		t.Fatal(err)
	}
	if p := s.TxPending(); p != 0 {
		kicks, stalls, nobufs := s.KickCounters()
		t.Fatalf("TX ring holds %d after one Kick (kicks %d stalls %d nobufs %d)", p, kicks, stalls, nobufs)
	}
	if kicks, _, _ := s.KickCounters(); kicks < ntx/32 {
		t.Errorf("Kick made %d sendto calls for %d frames; copy mode needs >= %d", kicks, ntx, ntx/32)
	}
	// With XDP_USE_NEED_WAKEUP in copy mode the kernel keeps the TX ring's
	// flag set (every kick is a sendto, as without it) and never sets the
	// fill ring's (nothing to wake): the option changes nothing on veth.
	if !s.TxNeedsWakeup() || s.FillNeedsWakeup() {
		t.Errorf("copy mode, need_wakeup: TX ring flag %v, fill ring flag %v; want set and clear", s.TxNeedsWakeup(), s.FillNeedsWakeup())
	}
	for i := range ntx {
		got := peer.recv(2 * time.Second)
		if got == nil {
			t.Fatalf("peer received %d of %d transmitted frames", i, ntx)
		}
		want := testFrame(b.HardwareAddr, a.HardwareAddr, uint32(i), frameLen(uint32(i)))
		if !bytes.Equal(got, want) {
			t.Fatalf("peer frame %d differs: len %d want %d", i, len(got), len(want))
		}
	}
	// Every transmitted frame comes back on the completion ring.
	comp := make([]uint64, 64)
	done := map[uint64]bool{}
	for len(done) < ntx && time.Now().Before(deadline.Add(5*time.Second)) {
		k := s.Complete(comp)
		for _, c := range comp[:k] {
			done[c] = true
			free.Push(u.FrameBase(c))
		}
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(done) != ntx {
		t.Fatalf("completed %d of %d", len(done), ntx)
	}
	for _, d := range txd {
		if !done[d.Addr] {
			t.Fatalf("address %#x never completed", d.Addr)
		}
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.RxDropped != 0 || st.RxInvalidDescs != 0 || st.TxInvalidDescs != 0 || st.RxRingFull != 0 {
		t.Errorf("unexpected drops: %+v", st)
	}
	t.Logf("stats %+v", st)

	// Errors name the interface and queue and suggest a fix.
	u2, err := NewUmem(UmemConfig{FrameSize: 2048, FrameCount: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u2.Close() })
	_, err = u2.Open("lfx0a", 0, SocketConfig{BindRetries: -1})
	if !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "lfx0a queue 0") || !strings.Contains(err.Error(), "another AF_XDP socket") {
		t.Errorf("second socket on a held queue: %v", err)
	}
	_, err = u2.Open("lfx0b", 0, SocketConfig{Mode: ModeZeroCopy})
	if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), "zero-copy") {
		t.Errorf("forced zero-copy on veth: %v", err)
	}
	_, err = u2.Open("lfxnosuch", 0, SocketConfig{})
	if err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("missing interface: %v", err)
	}
	_, err = u2.Open("lfx0b", 5, SocketConfig{})
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "queue 5") {
		t.Errorf("queue out of range: %v", err)
	}

	// Close is idempotent, and the queue can be bound again right away
	// (EBUSY while the old socket is torn down is retried).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if s.Receive(descs) != 0 || s.Transmit(txd[:1]) != 0 || s.Fill(fill[:1]) != 0 || s.Kick() != nil {
		t.Error("closed socket still moves frames")
	}
	t0 := time.Now()
	s2, err := u2.Open("lfx0a", 0, SocketConfig{BusyPollUsec: 20, BusyPollBudget: 16})
	t.Logf("rebind took %v", time.Since(t0))
	if err != nil {
		t.Fatalf("rebind after close: %v", err)
	}
	if err := s2.Wake(); err != nil {
		t.Errorf("Wake: %v", err)
	}
	if v, err := unix.GetsockoptInt(s2.FD(), unix.SOL_SOCKET, unix.SO_BUSY_POLL); err != nil || v != 20 {
		t.Errorf("SO_BUSY_POLL = %d, %v; want 20", v, err)
	}
	if v, err := unix.GetsockoptInt(s2.FD(), unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL); err != nil || v != 1 {
		t.Errorf("SO_PREFER_BUSY_POLL = %d, %v; want 1", v, err)
	}
}

// TestIntegrationSharedUmemForward forwards frames between two veth ports with
// two sockets sharing one UMEM: a frame received on one socket is transmitted
// on the other from the same UMEM slot, without copying.
func TestIntegrationSharedUmemForward(t *testing.T) {
	n := newTestNS(t)
	a1, b1 := n.veth("lfx1a", "lfx1b", 1)
	a2, b2 := n.veth("lfx2a", "lfx2b", 1)
	m1 := attachRedirect(t, a1.Index)
	m2 := attachRedirect(t, a2.Index)

	u, err := NewUmem(UmemConfig{FrameSize: 4096, FrameCount: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	cfg := SocketConfig{RxSize: 256, TxSize: 256, FillSize: 256, CompletionSize: 256}
	s1, err := u.Open("lfx1a", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := u.Open("lfx2a", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Shared() || !s2.Shared() || s2.Mode() != s1.Mode() {
		t.Fatalf("s1 shared=%v s2 shared=%v modes %s/%s", s1.Shared(), s2.Shared(), s1.Mode(), s2.Mode())
	}
	if got := u.Sockets(); len(got) != 2 {
		t.Fatalf("UMEM has %d sockets", len(got))
	}
	if err := m1.Put(uint32(0), uint32(s1.FD())); err != nil {
		t.Fatal(err)
	}
	if err := m2.Put(uint32(0), uint32(s2.FD())); err != nil {
		t.Fatal(err)
	}
	free := u.NewFreeList()
	buf := make([]uint64, 200)
	for _, s := range []*Socket{s1, s2} {
		k := free.PopN(buf)
		if s.Fill(buf[:k]) != k {
			t.Fatal("initial fill")
		}
	}
	p1, p2 := openPacket(t, b1.Index), openPacket(t, b2.Index)

	socks := [2]*Socket{s1, s2}
	poller := NewPoller(s1, s2)
	descs := make([]Desc, 64)
	comp := make([]uint64, 64)
	sameSlot := 0
	// forward moves whatever arrived on either port to the other and recycles
	// completed frames into the fill ring of the socket that will receive next.
	forward := func() {
		ready, err := poller.Wait(20 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		_ = ready
		for i, in := range socks {
			out := socks[1-i]
			k := in.Receive(descs)
			if k > 0 {
				sameSlot += k
				if out.Transmit(descs[:k]) != k {
					t.Fatal("TX ring full")
				}
				if err := out.Kick(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, s := range socks {
			k := s.Complete(comp)
			for j := range k {
				comp[j] = u.FrameBase(comp[j])
			}
			// Frames freed by TX on s go back to the fill ring of the other
			// socket, the one they were received on.
			if socks[1-i].Fill(comp[:k]) != k {
				t.Fatal("fill ring full")
			}
		}
	}

	const total = 400
	for dir, ends := range [][2]*packetSock{{p1, p2}, {p2, p1}} {
		src, dst := ends[0], ends[1]
		srcMAC, dstMAC := b1.HardwareAddr, b2.HardwareAddr
		if dir == 1 {
			srcMAC, dstMAC = dstMAC, srcMAC
		}
		got := uint32(0)
		for sent := uint32(0); sent < total; {
			for range 32 {
				src.send(testFrame(dstMAC, srcMAC, sent, frameLen(sent)))
				sent++
			}
			deadline := time.Now().Add(3 * time.Second)
			for got < sent && time.Now().Before(deadline) {
				forward()
				for {
					f := dst.recv(0)
					if f == nil {
						break
					}
					seq, ok := frameSeq(f)
					if !ok {
						continue
					}
					if seq != got {
						t.Fatalf("direction %d: got seq %d, want %d", dir, seq, got)
					}
					if want := testFrame(dstMAC, srcMAC, seq, frameLen(seq)); !bytes.Equal(f, want) {
						t.Fatalf("direction %d: frame %d differs", dir, seq)
					}
					got++
				}
			}
			if got < sent {
				st1, _ := s1.Stats()
				st2, _ := s2.Stats()
				t.Fatalf("direction %d: %d of %d frames forwarded; s1 %+v s2 %+v", dir, got, sent, st1, st2)
			}
		}
	}
	// The data path of a real socket does not allocate: poll, receive,
	// transmit, kick, complete, fill, wake.
	if allocs := testing.AllocsPerRun(200, func() {
		poller.Wait(0)
		k := s1.Receive(descs)
		s2.Transmit(descs[:k])
		_ = s2.Kick()
		k = s2.Complete(comp)
		s1.Fill(comp[:k])
		_ = s1.Wake()
	}); allocs != 0 {
		t.Errorf("data path allocates %.1f times per iteration", allocs)
	}
	if sameSlot < 2*total {
		t.Fatalf("forwarded %d descriptors, want >= %d", sameSlot, 2*total)
	}
	for i, s := range socks {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.RxDropped != 0 || st.RxInvalidDescs != 0 || st.TxInvalidDescs != 0 {
			t.Errorf("socket %d: %+v", i, st)
		}
	}
	// Closing the UMEM closes both sockets.
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if len(u.Sockets()) != 0 || s2.FD() != -1 {
		t.Fatal("UMEM close left sockets open")
	}
}

// TestIntegrationQueues opens one socket per queue of a 2-queue veth.
func TestIntegrationQueues(t *testing.T) {
	n := newTestNS(t)
	n.veth("lfx3a", "lfx3b", 2)
	q, err := QueueCount("lfx3a")
	if err != nil || q != 2 {
		t.Fatalf("QueueCount(lfx3a) = %d, %v; want 2", q, err)
	}
	if _, err := QueueCount("lfxnosuch"); err == nil {
		t.Error("QueueCount of a missing interface succeeded")
	}
	if q, err := TxQueueCount("lfx3a"); err != nil || q != 2 {
		t.Errorf("TxQueueCount(lfx3a) = %d, %v; want 2", q, err)
	}
	u, err := NewUmem(UmemConfig{FrameSize: 2048, FrameCount: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	socks, err := u.OpenAll("lfx3a", SocketConfig{RxSize: 64, TxSize: 64, FillSize: 64, CompletionSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(socks) != 2 || socks[0].Queue() != 0 || socks[1].Queue() != 1 || socks[0].Shared() || !socks[1].Shared() {
		t.Fatalf("OpenAll gave %d sockets", len(socks))
	}
	// Close the first (UMEM-registering) socket: the second keeps the UMEM
	// registered, and a new socket on queue 0 shares it through the second.
	if err := socks[0].Close(); err != nil {
		t.Fatal(err)
	}
	s, err := u.Open("lfx3a", 0, SocketConfig{RxSize: 64, TxSize: 64, FillSize: 64, CompletionSize: 64})
	if err != nil {
		t.Fatalf("reopen queue 0: %v", err)
	}
	if !s.Shared() {
		t.Error("reopened socket did not share the live UMEM")
	}
	if _, err := u.Open("lfx3a", 1, SocketConfig{}); !errors.Is(err, unix.EBUSY) {
		t.Errorf("second socket on queue 1 of the same UMEM: %v", err)
	}
	// More RX than TX queues (a NIC's rx/tx channels): counted apart.
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lfx3c", NumTxQueues: 1, NumRxQueues: 2}, PeerName: "lfx3d"}
	if err := n.h.LinkAdd(v); err != nil {
		t.Fatalf("add veth lfx3c with 2 RX and 1 TX queue: %v", err)
	}
	rx, err1 := QueueCount("lfx3c")
	tx, err2 := TxQueueCount("lfx3c")
	if rx != 2 || tx != 1 || err1 != nil || err2 != nil {
		t.Errorf("2 RX, 1 TX queue: QueueCount %d (%v), TxQueueCount %d (%v)", rx, err1, tx, err2)
	}
}
