package dataplane

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/pfc"
	"golang.org/x/sys/unix"
)

// RawCapture is an AF_PACKET socket receiving the frames of EtherType
// proto on an interface of a namespace (both directions), with a 20 ms
// receive timeout.
func RawCapture(t *testing.T, ns, dev string, proto uint16) int {
	t.Helper()
	be := int(proto>>8 | proto<<8) // network order
	var fd int
	if err := netns.Do(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, be); err != nil {
			return err
		}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 20_000}); err != nil {
			return err
		}
		// A capture that falls behind for a scheduling stall must not
		// drop what the dataplane delivered (captureDrops counts it).
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(be), Ifindex: ifc.Index})
	}); err != nil {
		t.Fatalf("AF_PACKET capture on %s in %s: %v", dev, ns, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// CaptureDrops returns the frames rawCapture's socket fd dropped (its
// receive buffer full) since the last call.
func CaptureDrops(t *testing.T, fd int) uint32 {
	t.Helper()
	st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		t.Fatalf("PACKET_STATISTICS: %v", err)
	}
	return st.Drops
}

// Capture reads frames from fd until d passes or each returns false.
func Capture(t *testing.T, fd int, d time.Duration, each func(b []byte) bool) {
	t.Helper()
	buf := make([]byte, 2048)
	for end := time.Now().Add(d); time.Now().Before(end); {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		if !each(buf[:n]) {
			return
		}
	}
}

// ClassFrame is an untagged IPv4-typed frame of n bytes whose TOS puts it in
// class (DSCP/8), numbered seq, marked for classOf.
func ClassFrame(class, seq, n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 0x98, 0x08, 0x00, 0x45, byte(class << 5)})
	copy(b[34:], "lfpq")
	b[38], b[39] = byte(class), byte(seq)
	return b
}

// ClassOf returns the class of a frame made by classFrame, or -1.
func ClassOf(b []byte) int {
	if len(b) < 40 || string(b[34:38]) != "lfpq" {
		return -1
	}
	return int(b[38])
}

// pfcFrame is a PFC frame from src pausing (q > 0) or resuming class.
func pfcFrame(t *testing.T, src [6]byte, class int, q uint16) []byte {
	t.Helper()
	var quanta [pfc.NumClasses]uint16
	quanta[class] = q
	f := pfc.NewPFC(src, 1<<class, quanta)
	b := make([]byte, pfc.FrameLen)
	if _, err := f.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForwardPFCFromLink: mode forward with --pfc takes the AF_XDP path
// (and --fastpath xdp refuses it); a PFC frame from the link's peer pausing
// class 3 holds h1's class-3 frames in sw1 while its class-1 frames pass,
// is consumed (not forwarded to h1), and a resume (quanta 0) lets class 3
// through at once, long before the pause would run out.
func TestForwardPFCFromLink(t *testing.T) {
	tb := netns.TestUp(t, "lfpq", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1NS := tb.NS("sw1")
	err := netns.Do(sw1NS, func() error {
		d, err := New(Config{HostPort: "host0", LinkPort: "link0", FastPath: FastPathXDP, PFC: PFCConfig{Enabled: true}})
		if err == nil {
			d.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "--pfc") {
		t.Errorf("--fastpath xdp with --pfc: error %v, want one naming --pfc", err)
	}
	// At 10 Mbit/s a pause of 65535 quanta lasts 3.36 s.
	cfg := Config{FastPath: FastPathAuto, PFC: PFCConfig{Enabled: true}}
	cfg.Link.Speed = 10_000_000
	sw1 := StartSwitch(t, sw1NS, cfg)
	for _, f := range sw1.FastPath() {
		if f.Path != FastPathAFXDP || !strings.Contains(f.Reason, "--pfc") {
			t.Errorf("forward --pfc, fastpath auto: %+v, want afxdp because of --pfc", f)
		}
	}
	peer := RawSender(t, tb.NS("sw2"), "link0")
	atPeer := RawCapture(t, tb.NS("sw2"), "link0", 0x0800)
	atH1 := RawCapture(t, tb.NS("h1"), "eth0", pfc.EtherType)
	h1 := RawSender(t, tb.NS("h1"), "eth0")
	peerMAC := [6]byte{2, 0, 0, 0, 0, 0x97}

	// The pause and the resume are single frames: first make sure sw1's
	// link socket takes frames in (on a busy machine its worker may not have
	// filled the socket's rings yet when startSwitch returns, and a frame
	// that comes before is dropped by the kernel, not by the dataplane).
	warmLinkRx(t, sw1, peer)
	if _, err := unix.Write(peer, pfcFrame(t, peerMAC, 3, pfc.MaxQuanta)); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	waitPFCRx(t, sw1, 1)
	const each = 20
	for i := range each {
		for _, class := range []int{3, 1} {
			if _, err := unix.Write(h1, ClassFrame(class, i, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got [pfc.NumClasses]int
	Capture(t, atPeer, 300*time.Millisecond, func(b []byte) bool {
		if c := ClassOf(b); c >= 0 {
			got[c]++
		}
		return true
	})
	if got[1] != each || got[3] != 0 {
		t.Fatalf("while class 3 is paused, the link's peer got %d class-1 frames (want %d) and %d class-3 (want 0)", got[1], each, got[3])
	}
	if _, err := unix.Write(peer, pfcFrame(t, peerMAC, 3, 0)); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	Capture(t, atPeer, 2*time.Second, func(b []byte) bool {
		if c := ClassOf(b); c >= 0 {
			got[c]++
		}
		return got[3] < each
	})
	lasted := time.Since(pausedAt)
	if got[3] != each {
		t.Fatalf("after the resume, %d of %d class-3 frames reached the peer", got[3], each)
	}
	if lasted > 3*time.Second {
		t.Fatalf("class 3 passed %v after the pause: the pause ran out (3.36 s) rather than the resume ending it", lasted)
	}
	t.Logf("class 3 held %v, through %v after the resume", resumedAt.Sub(pausedAt).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))
	s := waitPFCRx(t, sw1, 2)
	if s.RxPause[3] != 1 || s.RxPause[1] != 0 {
		t.Errorf("pfc_rx_pause %v, want 1 for class 3 only", s.RxPause)
	}
	Capture(t, atH1, 50*time.Millisecond, func(b []byte) bool {
		t.Errorf("h1 received a MAC Control frame (%d bytes): the PFC from the link was forwarded", len(b))
		return false
	})
}

// warmLinkRx sends class-0 frames into d's link port from the peer's raw
// socket until d counted one received (at most 10 s).
func warmLinkRx(t *testing.T, d *Dataplane, peer int) {
	t.Helper()
	rx0 := d.Stats().Link.RX.Frames
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if d.Stats().Link.RX.Frames > rx0 {
			return
		}
		if _, err := unix.Write(peer, ClassFrame(0, 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("%s took in no frame in 10 s", d.Config().LinkPort)
}

// waitPFCRx waits until d counted n PAUSE/PFC frames from the link.
func waitPFCRx(t *testing.T, d *Dataplane, n uint64) *PFCSnapshot {
	t.Helper()
	var s *PFCSnapshot
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if s = d.Stats().PFC; s != nil && s.Rx >= n {
			return s
		}
	}
	t.Fatalf("PFC frames received on the link port: %+v, want %d", s, n)
	return nil
}

// TestForwardPFCToHost: sw1's link port sends at 20 Mbit/s, h1 sends class-2
// frames far faster; the class queue reaches XOFF and sw1 sends h1 a PFC
// frame pausing class 2 with the quanta of 2 ms at the host's 1 Gbit/s,
// refreshes it while the queue drains, and resumes class 2 (quanta 0) once
// at XON. What h1 captured is what /stats.json counts, and no frame is lost
// unseen.
func TestForwardPFCToHost(t *testing.T) {
	tb := netns.TestUp(t, "lfpq", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	cfg := Config{PFC: PFCConfig{Enabled: true, XOFF: 32, XON: 8, Pause: 2 * time.Millisecond},
		Shape: map[string]PortShape{"link0": {Rate: 20_000_000, Buffer: 16 << 10}}}
	cfg.Link.Speed = pfc.Speed1G
	sw1 := StartSwitch(t, tb.NS("sw1"), cfg)
	atH1 := RawCapture(t, tb.NS("h1"), "eth0", pfc.EtherType)
	h1 := RawSender(t, tb.NS("h1"), "eth0")
	hostMAC := sw1.Host().mac

	const frames = 400
	// h1 keeps at most inFlight frames ahead of what sw1 took in: a burst
	// longer than the veth's ring (256) is dropped on the host segment
	// whenever sw1 is not scheduled in time, and that segment is not the
	// one under test. sw1 takes frames in whether or not class 2 is
	// paused (it queues them), so the pause still comes.
	const inFlight = 64
	sockDrops := func() (n uint64) {
		for _, k := range sw1.Host().Sockets() {
			if st, err := k.Stats(); err == nil {
				n += st.RxDropped + st.RxRingFull
			}
		}
		return n
	}
	// The worker fills the host socket's fill ring before its first loop:
	// frames sent before then find no buffer.
	end := time.Now().Add(10 * time.Second)
	for sw1.Stats().Loops == 0 && time.Now().Before(end) {
		time.Sleep(time.Millisecond)
	}
	for i := range frames {
		for i-int(sw1.Stats().Host.RX.Frames+sockDrops()) >= inFlight && time.Now().Before(end) {
			time.Sleep(50 * time.Microsecond)
		}
		if _, err := unix.Write(h1, ClassFrame(2, i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// 400 frames of 1024 bytes on the wire at 20 Mbit/s drain in 164 ms.
	var pauses, resumes int
	var last time.Time
	var maxGap time.Duration
	Capture(t, atH1, 3*time.Second, func(b []byte) bool {
		var f pfc.Frame
		if err := pfc.Decode(b, &f); err != nil {
			t.Fatalf("h1 captured a MAC Control frame that does not decode: %v (% x)", err, b)
		}
		if f.Opcode != pfc.OpPFC || f.Dst != pfc.MulticastAddr || f.Src != hostMAC || f.ClassEnable != 1<<2 {
			t.Fatalf("h1 captured %+v, want PFC from sw1's host0 %x to %x naming class 2 only", f, hostMAC, pfc.MulticastAddr)
		}
		now := time.Now()
		switch q := f.Quanta[2]; {
		case resumes > 0:
			t.Fatalf("a frame (quanta %d) after the resume", q)
		case q == 0:
			if pauses == 0 {
				t.Fatal("a resume before any pause")
			}
			resumes++
			return false
		case q != 3907: // 2 ms at 1 Gbit/s: 3906.25 quanta of 512 ns
			t.Fatalf("pause of %d quanta, want 3907", q)
		default:
			if pauses > 0 {
				maxGap = max(maxGap, now.Sub(last))
			}
			pauses++
			last = now
		}
		return true
	})
	if pauses < 2 || resumes != 1 {
		t.Fatalf("h1 captured %d pauses and %d resumes, want a pause refreshed while the queue drains, then one resume; sw1: %+v", pauses, resumes, sw1.Stats())
	}
	t.Logf("h1 captured %d pause frames (longest gap %v; the pause lasts 2 ms, refreshed every 1 ms) and 1 resume", pauses, maxGap.Round(time.Microsecond))
	// The resume left at XON: the last frames are still queued.
	s := sw1.Stats()
	for end := time.Now().Add(time.Second); s.Link.TX.Frames < frames && time.Now().Before(end); s = sw1.Stats() {
		time.Sleep(5 * time.Millisecond)
	}
	p := s.PFC
	if p.Xoff[2] != 1 || p.Xon[2] != 1 || p.Tx[2] != uint64(pauses+resumes) || p.HostPaused != 0 {
		t.Errorf("stats: pfc_tx %v pfc_xoff %v pfc_xon %v paused %08b; h1 captured %d frames (1 pause begun, 1 resume)",
			p.Tx, p.Xoff, p.Xon, p.HostPaused, pauses+resumes)
	}
	// Every frame sw1 took in reaches the link; none is dropped at its
	// egress. h1 ignores the pause (a raw socket on a veth, which honours
	// none), so a frame can still be dropped on its way in, at the host
	// port's socket: counted there (no fill buffer, ring full), never lost
	// unseen.
	dropped := sockDrops()
	if s.Link.TX.Frames != s.Host.RX.Frames || s.Link.Egress.Dropped != 0 || s.Host.RX.Frames+dropped != frames {
		t.Errorf("sw1: host rx %d (socket drops %d), link tx %d, egress dropped %d; want every one of the %d frames through or counted at the host socket",
			s.Host.RX.Frames, dropped, s.Link.TX.Frames, s.Link.Egress.Dropped, frames)
	}
	if dropped > 0 {
		t.Logf("sw1's host socket dropped %d of the %d frames for want of a fill buffer or ring room (h1 ignores the pause)", dropped, frames)
	}
}
