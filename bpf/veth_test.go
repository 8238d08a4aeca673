package bpf

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

var nsSeq atomic.Int32

// vethNet is a veth pair lfba <-> lfbb in a fresh namespace lfbtest<pid>-<n>.
// The test's goroutine stays locked to its OS thread, which is inside the
// namespace until cleanup; cleanup deletes the namespace (and with it the
// veth pair and any XDP program attached to it) even when the test fails.
type vethNet struct {
	t      *testing.T
	name   string
	a, b   netlink.Link
	rx, tx int // AF_PACKET sockets: rx bound to lfbb, tx to lfba
}

const testEtherType = 0x88b5

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func newVethNet(t *testing.T, mtu int) *vethNet {
	t.Helper()
	return newVethNetNamed(t, "lfbtest", "lfba", "lfbb", mtu)
}

// newVethNetNamed is newVethNet with the namespace's base name and the
// interfaces' names given.
func newVethNetNamed(t *testing.T, base, ifa, ifb string, mtu int) *vethNet {
	t.Helper()
	needRoot(t)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s%d-%d", base, os.Getpid(), nsSeq.Add(1))
	ns, err := netns.NewNamed(name) // also moves this thread into it
	if err != nil {
		orig.Close()
		t.Fatalf("create netns %s: %v", name, err)
	}
	n := &vethNet{t: t, name: name, rx: -1, tx: -1}
	t.Cleanup(func() {
		if n.rx >= 0 {
			unix.Close(n.rx)
		}
		if n.tx >= 0 {
			unix.Close(n.tx)
		}
		if err := netns.Set(orig); err != nil {
			t.Errorf("return to original netns: %v", err)
		}
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
		ns.Close()
		orig.Close()
		runtime.UnlockOSThread()
	})
	// No IPv6 autoconfiguration chatter in the counters.
	for _, f := range []string{"all", "default"} {
		os.WriteFile("/proc/sys/net/ipv6/conf/"+f+"/disable_ipv6", []byte("1"), 0)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = ifa
	if mtu > 0 {
		attrs.MTU = mtu
	}
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: ifb}
	if mtu > 0 {
		veth.PeerMTU = uint32(mtu)
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("create veth pair in %s: %v", name, err)
	}
	for _, ifn := range []string{ifa, ifb} {
		l, err := netlink.LinkByName(ifn)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	n.a, _ = netlink.LinkByName(ifa)
	n.b, _ = netlink.LinkByName(ifb)
	return n
}

func (n *vethNet) openSockets() {
	t := n.t
	t.Helper()
	var err error
	if n.tx, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(n.tx, &unix.SockaddrLinklayer{Protocol: htons(testEtherType), Ifindex: n.a.Attrs().Index}); err != nil {
		t.Fatal(err)
	}
	if n.rx, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK, int(htons(testEtherType))); err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(n.rx, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	if err := unix.Bind(n.rx, &unix.SockaddrLinklayer{Protocol: htons(testEtherType), Ifindex: n.b.Attrs().Index}); err != nil {
		t.Fatal(err)
	}
}

// send transmits count frames from lfba to lfbb, paced so that no queue on
// the way overflows.
func (n *vethNet) send(count int) {
	t := n.t
	t.Helper()
	if n.tx < 0 {
		n.openSockets()
	}
	frame := make([]byte, 100)
	copy(frame, n.b.Attrs().HardwareAddr)
	copy(frame[6:], n.a.Attrs().HardwareAddr)
	frame[12], frame[13] = testEtherType>>8, testEtherType&0xff
	for i := 0; i < count; i++ {
		frame[14], frame[15] = byte(i>>8), byte(i)
		if err := unix.Send(n.tx, frame, 0); err != nil {
			t.Fatalf("send frame %d on lfba: %v", i, err)
		}
		if i%32 == 31 {
			time.Sleep(500 * time.Microsecond)
		}
	}
}

// received drains lfbb's packet socket and returns how many test frames it
// got, waiting until the count is stable.
func (n *vethNet) received() int {
	buf := make([]byte, 4096)
	total, quiet := 0, 0
	for quiet < 20 {
		got := 0
		for {
			_, _, err := unix.Recvfrom(n.rx, buf, 0)
			if err != nil {
				break
			}
			got++
		}
		total += got
		if got == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(5 * time.Millisecond)
	}
	return total
}

func (n *vethNet) progID(ifname string) uint32 {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		n.t.Fatal(err)
	}
	id, _ := attachedProg(l)
	return id
}

func waitStats(t *testing.T, read func() (ImpairStats, error), cond func(ImpairStats) bool) ImpairStats {
	t.Helper()
	var s ImpairStats
	var err error
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s, err = read(); err != nil {
			t.Fatal(err)
		}
		if cond(s) {
			return s
		}
	}
	t.Fatalf("timed out; impair stats %+v", s)
	return s
}

func TestStandaloneImpairer(t *testing.T) {
	n := newVethNet(t, 0)
	im, err := AttachImpairer("lfbb", ImpairConfig{Loss: 0.2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("standalone impairer on lfbb: mode %v, program id %d", im.Mode(), im.ProgramID())
	if im.Mode() != XDPNative {
		t.Errorf("mode %v on veth, want native (fallback: %v)", im.Mode(), im.FallbackReason())
	}
	im.Close() // the program stays attached
	if n.progID("lfbb") == 0 {
		t.Fatal("no XDP program on lfbb after closing the handle")
	}

	// A fresh handle finds it, as a separate CLI process would.
	h := openImpairerKind(t, "lfbb", KindStandalone)
	defer h.Close()
	cfg, on, err := h.ImpairConfig()
	if err != nil || !on || cfg.Model != Bernoulli || !within(cfg.Loss, 0.2, 1e-6) || cfg.Seed != 5 {
		t.Errorf("read back config %+v enabled=%v err=%v", cfg, on, err)
	}

	const sent = 2000
	n.send(sent)
	st := waitStats(t, h.ImpairStats, func(s ImpairStats) bool { return s.Seen >= sent })
	got := n.received()
	t.Logf("loss 0.2: sent %d, %v, received %d", sent, st, got)
	if st.Seen != sent || got != int(st.Seen-st.Dropped) || st.Dropped < 300 || st.Dropped > 500 {
		t.Errorf("loss 0.2: stats %+v, received %d of %d", st, got, sent)
	}

	// Changes made through the handle take effect on the running traffic.
	for _, tc := range []struct {
		cfg      *ImpairConfig
		frames   int
		wantDrop int // -1: bursty, checked by range
	}{
		{&ImpairConfig{Loss: 0}, 300, 0},
		{&ImpairConfig{Loss: 1}, 300, 300},
		{func() *ImpairConfig { c := Bursty(0.5, 4); return &c }(), 1000, -1},
		{nil, 300, 0}, // ClearImpair: nothing counted, nothing dropped
	} {
		if tc.cfg != nil {
			err = h.SetImpair(*tc.cfg)
		} else {
			err = h.ClearImpair()
		}
		if err != nil {
			t.Fatal(err)
		}
		before, _ := h.ImpairStats()
		n.send(tc.frames)
		if tc.cfg != nil {
			waitStats(t, h.ImpairStats, func(s ImpairStats) bool { return s.Seen >= before.Seen+uint64(tc.frames) })
		}
		got := n.received()
		after, _ := h.ImpairStats()
		d := after.Sub(before)
		t.Logf("%v: %v, received %d of %d", tc.cfg, d, got, tc.frames)
		switch {
		case tc.cfg == nil && (d != ImpairStats{} || got != tc.frames):
			t.Errorf("cleared: stats moved %+v, received %d of %d", d, got, tc.frames)
		case tc.cfg != nil && (d.Seen != uint64(tc.frames) || got != tc.frames-int(d.Dropped)):
			t.Errorf("%v: stats delta %+v, received %d of %d", tc.cfg, d, got, tc.frames)
		case tc.wantDrop >= 0 && int(d.Dropped) != tc.wantDrop:
			t.Errorf("%v: dropped %d, want %d", tc.cfg, d.Dropped, tc.wantDrop)
		case tc.wantDrop < 0 && (d.Dropped < 300 || d.Dropped > 700 || d.MeanBurst() < 2):
			t.Errorf("%v: dropped %d, mean burst %.2f; want about 500 and 4", tc.cfg, d.Dropped, d.MeanBurst())
		}
	}

	// It refuses a second program, and so does AttachPort.
	_, err = AttachImpairer("lfbb", ImpairConfig{})
	var busy *BusyError
	if !errors.As(err, &busy) || busy.ProgName != impairerProgName || busy.HeldByLink ||
		!strings.Contains(err.Error(), "ip link set dev lfbb xdp off") || !strings.Contains(err.Error(), "linkfabric impair --off") {
		t.Errorf("second AttachImpairer: %v", err)
	}
	_, err = AttachPort("lfbb", PortOptions{})
	if !errors.As(err, &busy) || uint32(busy.ProgID) != n.progID("lfbb") {
		t.Errorf("AttachPort over the impairer: %v", err)
	} else {
		t.Logf("AttachPort over the impairer: %v", err)
	}

	if err := DetachImpairer("lfbb"); err != nil {
		t.Fatal(err)
	}
	if id := n.progID("lfbb"); id != 0 {
		t.Errorf("program id %d still on lfbb after DetachImpairer", id)
	}
	if _, err := OpenImpairer("lfbb"); !errors.Is(err, ErrNoProgram) {
		t.Errorf("OpenImpairer after detach: %v, want ErrNoProgram", err)
	}
	if err := DetachImpairer("lfbb"); !errors.Is(err, ErrNoProgram) {
		t.Errorf("second DetachImpairer: %v, want ErrNoProgram", err)
	}
	if _, err := AttachPort("lfbnope", PortOptions{}); err == nil || !strings.Contains(err.Error(), "lfbnope not found in netns "+n.name) {
		t.Errorf("missing interface: %v", err)
	}
}

// bindXSK binds a minimal copy-mode AF_XDP socket (no rings mapped) to
// ifindex queue 0: enough to be registered in an XSKMAP.
func bindXSK(t *testing.T, ifindex int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	mem, err := unix.Mmap(-1, 0, 16*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), Len: uint64(len(mem)), Size: 4096}
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0); e != 0 {
		t.Fatalf("XDP_UMEM_REG: %v", e)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, 16); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: 0}); err != nil {
		t.Fatalf("bind AF_XDP: %v", err)
	}
	return fd
}

func TestAttachPortVeth(t *testing.T) {
	n := newVethNet(t, 0)
	p, err := AttachPort("lfbb", PortOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != XDPNative || p.FallbackReason() != nil {
		t.Errorf("veth: mode %v (fallback %v), want native", p.Mode(), p.FallbackReason())
	}
	id, _ := p.ProgramID()
	if got := n.progID("lfbb"); got != uint32(id) {
		t.Fatalf("lfbb carries program %d, port's is %d", got, id)
	}

	// Another handle (as from the CLI) finds the port and configures it.
	h := openImpairerKind(t, "lfbb", KindPort)
	defer h.Close()
	if err := h.SetImpair(ImpairConfig{Loss: 1}); err != nil {
		t.Fatal(err)
	}
	n.send(100)
	waitStats(t, p.ImpairStats, func(s ImpairStats) bool { return s.Seen >= 100 })
	if got := n.received(); got != 0 {
		t.Errorf("loss 1: %d frames got through", got)
	}
	if err := h.ClearImpair(); err != nil {
		t.Fatal(err)
	}
	n.send(100)
	if got := n.received(); got != 100 {
		t.Errorf("impairment cleared, no XSK: received %d of 100", got)
	}
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	hc, _ := h.ProgCounters()
	t.Logf("port counters: %+v", c)
	if c.RxFrames != 200 || c.ImpairDropped != 100 || c.Passed != 100 || c.Redirected != 0 || c.RxBytes != 200*100 || hc != c {
		t.Errorf("port counters %+v (via handle %+v)", c, hc)
	}

	// Frames of a queue with a registered socket are redirected.
	if err := p.RegisterXSK(0, bindXSK(t, n.b.Attrs().Index)); err != nil {
		t.Fatal(err)
	}
	n.send(50)
	n.received()
	c2, _ := p.Counters()
	if c2.Redirected-c.Redirected != 50 || c2.Passed != c.Passed {
		t.Errorf("with XSK on queue 0: counters %+v, before %+v", c2, c)
	}
	if err := p.RegisterXSK(64, 0); err == nil {
		t.Error("RegisterXSK(64) accepted")
	}
	if err := p.UnregisterXSK(0); err != nil {
		t.Error(err)
	}

	// Refusals while the port holds the interface.
	if err := DetachImpairer("lfbb"); !errors.Is(err, ErrForeignProgram) {
		t.Errorf("DetachImpairer on a port: %v", err)
	}
	_, err = AttachPort("lfbb", PortOptions{})
	var busy *BusyError
	if !errors.As(err, &busy) || !busy.HeldByLink || busy.ProgName != portProgName {
		t.Errorf("second AttachPort: %v", err)
	} else {
		t.Logf("second AttachPort: %v", err)
	}
	if _, err := AttachImpairer("lfbb", ImpairConfig{}); !errors.As(err, &busy) {
		t.Errorf("AttachImpairer over a port: %v", err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := n.progID("lfbb"); got != 0 {
		t.Errorf("program %d still attached after Close", got)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestAttachModes(t *testing.T) {
	newVethNet(t, 0)
	// A bridge has no native XDP: XDPAuto falls back to generic and says why.
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "lfbbr0"}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	p, err := AttachPort("lfbbr0", PortOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bridge: mode %v, fallback reason: %v", p.Mode(), p.FallbackReason())
	if p.Mode() != XDPGeneric || p.FallbackReason() == nil || !strings.Contains(p.FallbackReason().Error(), "does not run XDP natively") {
		t.Errorf("bridge: mode %v, fallback %v", p.Mode(), p.FallbackReason())
	}
	p.Close()
	if _, err := AttachPort("lfbbr0", PortOptions{Mode: XDPNative}); err == nil || !strings.Contains(err.Error(), "does not run XDP natively") {
		t.Errorf("bridge, native only: %v", err)
	}
	// Generic on request, on a veth that could do native.
	p, err = AttachPort("lfbb", PortOptions{Mode: XDPGeneric})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := netlink.LinkByName("lfbb")
	if _, m := attachedProg(l); p.Mode() != XDPGeneric || m != XDPGeneric {
		t.Errorf("asked generic: port says %v, kernel says %v", p.Mode(), m)
	}
	p.Close()
}

// TestJumboMTU: the XDP programs are loaded with frags (BPF_F_XDP_HAS_FRAGS), so
// both attach natively to a veth of MTU 9000 (without frags veth refuses
// anything above 3506); a 9000-byte frame, which the veth hands over as a
// multi-buffer xdp_buff, is counted whole by the port program, passed on
// intact, and the impairment stage flips bits in its fragments too.
func TestJumboMTU(t *testing.T) {
	for _, load := range []func() (*ebpf.CollectionSpec, error){loadPort, loadImpairer} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range spec.Programs {
			if p.Type != ebpf.XDP {
				continue // lf_cell_rx_tc, on TCX
			}
			if p.Flags&unix.BPF_F_XDP_HAS_FRAGS == 0 || p.SectionName != "xdp.frags" {
				t.Errorf("program %s: section %q flags %#x, want xdp.frags (BPF_F_XDP_HAS_FRAGS)", name, p.SectionName, p.Flags)
			}
		}
	}
	const mtu, size, count = 9000, 9014, 64
	n := newVethNetNamed(t, "lfjbtest", "lfjba", "lfjbb", mtu)
	p, err := AttachPort("lfjbb", PortOptions{})
	if err != nil {
		t.Fatalf("port program at MTU %d: %v", mtu, err)
	}
	if p.Mode() != XDPNative {
		t.Errorf("port program at MTU %d: mode %v (fallback %v), want native", mtu, p.Mode(), p.FallbackReason())
	}
	n.openSockets()
	frame := testFrame(size)
	copy(frame, n.b.Attrs().HardwareAddr)
	copy(frame[6:], n.a.Attrs().HardwareAddr)
	buf := make([]byte, 2*size)
	recvOne := func() []byte {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if k, _, err := unix.Recvfrom(n.rx, buf, 0); err == nil {
				return buf[:k]
			}
		}
		t.Fatal("a 9014-byte frame sent on lfjba did not arrive on lfjbb")
		return nil
	}
	// No AF_XDP socket: the program passes the frames to the stack.
	for i := 0; i < count; i++ {
		if err := unix.Send(n.tx, frame, 0); err != nil {
			t.Fatalf("send a %d-byte frame: %v", size, err)
		}
		if got := recvOne(); !bytes.Equal(got, frame) {
			t.Fatalf("frame %d through the port program: %d bytes arrived, differing from the %d sent", i, len(got), size)
		}
	}
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.RxFrames != count || c.RxBytes != count*size {
		t.Errorf("port counters %+v after %d frames of %d bytes: want whole frames counted", c, count, size)
	}
	p.Close()

	im, err := AttachImpairer("lfjbb", ImpairConfig{FlipProb: 1, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	defer DetachImpairer("lfjbb")
	if im.Mode() != XDPNative {
		t.Errorf("standalone impairer at MTU %d: mode %v (fallback %v), want native", mtu, im.Mode(), im.FallbackReason())
	}
	beyond := 0 // flips past the first page, in the frame's fragments
	for i := 0; i < count; i++ {
		if err := unix.Send(n.tx, frame, 0); err != nil {
			t.Fatal(err)
		}
		got := recvOne()
		if len(got) != size {
			t.Fatalf("frame %d through the impairer: %d bytes, want %d", i, len(got), size)
		}
		diff, at := 0, 0
		for j := range got {
			if d := bits.OnesCount8(got[j] ^ frame[j]); d > 0 {
				diff, at = diff+d, j
			}
		}
		if diff != 1 || at < 14 {
			t.Fatalf("frame %d: %d bits differ (last at byte %d), want one bit after the Ethernet header", i, diff, at)
		}
		if at >= 4096 {
			beyond++
		}
	}
	// Uniform over 9000 bytes: about 55 % of the flips lie past 4096.
	if beyond < count/4 {
		t.Errorf("%d of %d flips past byte 4096, want about %d: the stage does not reach the fragments", beyond, count, count*55/100)
	}
}

// TestNotPermitted runs AttachPort and AttachImpairer as user nobody (no
// capabilities) in a child process and checks the errors explain why.
func TestNotPermitted(t *testing.T) {
	if os.Getenv("LFB_NOPRIV_CHILD") == "1" {
		for _, f := range []func() error{
			func() error { _, err := AttachPort("lo", PortOptions{}); return err },
			func() error { _, err := AttachImpairer("lo", ImpairConfig{}); return err },
		} {
			err := f()
			fmt.Printf("ERR %v\n", err)
			if !errors.Is(err, ErrPermission) || !errors.Is(err, os.ErrPermission) {
				fmt.Println("NOT-PERMISSION-ERROR")
			}
		}
		return
	}
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lfbnopriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := dir + "/bpf.test"
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestNotPermitted$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LFB_NOPRIV_CHILD=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if strings.Count(string(out), "ERR ") != 2 || strings.Contains(string(out), "NOT-PERMISSION-ERROR") ||
		!strings.Contains(string(out), "not root") || !strings.Contains(string(out), "CAP_BPF") {
		t.Errorf("unprivileged errors do not explain the missing privileges")
	}
}

// TestImpairerOutlivesProcess attaches the standalone impairer from a child
// process that then exits, and finds it still attached and working.
func TestImpairerOutlivesProcess(t *testing.T) {
	if ns := os.Getenv("LFB_ATTACH_CHILD"); ns != "" {
		runtime.LockOSThread()
		h, err := netns.GetFromName(ns)
		if err == nil {
			err = netns.Set(h)
		}
		if err == nil {
			_, err = AttachImpairer("lfbb", ImpairConfig{Loss: 1, Seed: 1})
		}
		fmt.Printf("CHILD %v\n", err)
		os.Exit(0) // exit without closing anything
	}
	n := newVethNet(t, 0)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestImpairerOutlivesProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LFB_ATTACH_CHILD="+n.name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD <nil>") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	h, err := OpenImpairer("lfbb")
	if err != nil {
		t.Fatalf("after the attaching process exited: %v", err)
	}
	defer h.Close()
	n.send(50)
	st := waitStats(t, h.ImpairStats, func(s ImpairStats) bool { return s.Seen >= 50 })
	if got := n.received(); got != 0 || st.Dropped != 50 {
		t.Errorf("loss 1 set by the exited process: %+v, %d received", st, got)
	}
	if err := DetachImpairer("lfbb"); err != nil {
		t.Fatal(err)
	}
}

// openImpairerKind opens the impairment stage on ifname, as a separate
// process would, and fails unless it is of kind.
func openImpairerKind(t *testing.T, ifname string, kind ProgramKind) *Impairer {
	t.Helper()
	h, err := OpenImpairer(ifname)
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind() != kind {
		t.Errorf("kind %v, want %v", h.Kind(), kind)
	}
	return h
}
