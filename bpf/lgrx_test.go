package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// LinkGuardian's receive fast path (lf_lg_rx), run with BPF_PROG_TEST_RUN:
// the program's verdict comes back without the frame being sent (the
// forward port is the loopback's ifindex 1), the output is the frame as the
// program left it, and the in-order point is read and written through the
// memory-mapped LGRx, as the Go core does. test_run gives rx_queue_index 0.

// loadLGRx loads the port program (not attached), as a link port with
// lg_rx on and a forward port, and maps lg_rx.
func loadLGRx(t *testing.T) (*PortProgram, *LGRx) {
	t.Helper()
	p := loadTestPort(t)
	return p, lgRxOn(t, p)
}

// loadTestPort loads the port program, not attached (its tests run it
// with BPF_PROG_TEST_RUN), and closes it when the test ends.
func loadTestPort(t *testing.T) *PortProgram {
	t.Helper()
	needRoot(t)
	prepare()
	p := &PortProgram{ifname: "test-run"}
	if err := loadPortObjects(&p.objs, nil); err != nil {
		t.Fatal(loadErr("port", err))
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// lgRxOn gives loaded program p a forward port (the loopback's ifindex 1),
// turns lg_rx on and maps its state.
func lgRxOn(t *testing.T, p *PortProgram) *LGRx { return fastOn(t, p, p.SetLGRx, p.LGRx) }

// fastOn gives loaded program p a forward port (the loopback's ifindex 1),
// turns a fast path on with set and maps its state with get.
func fastOn[T any](t *testing.T, p *PortProgram, set func(bool) error, get func() (*T, error)) *T {
	t.Helper()
	if err := p.SetForwardPort(1); err != nil {
		t.Fatal(err)
	}
	if err := set(true); err != nil {
		t.Fatal(err)
	}
	v, err := get()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// lgData is a valid data frame (seqhdr.Insert on a host frame of payload
// bytes after the Ethernet header, original EtherType 0x0800).
func lgData(t testing.TB, seq seqhdr.Seq, hasAck bool, ack seqhdr.Seq, payload int) []byte {
	t.Helper()
	host := make([]byte, 14+payload)
	copy(host, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	for i := 14; i < len(host); i++ {
		host[i] = byte(i * 7)
	}
	buf := make([]byte, seqhdr.MaxOverhead+len(host))
	copy(buf[seqhdr.MaxOverhead:], host)
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: seq, HasAck: hasAck, Ack: ack}
	off, n, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, len(host), &h)
	if err != nil {
		t.Fatal(err)
	}
	return buf[off : off+n]
}

// lgControl is a control frame (ACK, dummy, loss, pause, resume).
func lgControl(t testing.TB, h seqhdr.Header) []byte {
	t.Helper()
	b := make([]byte, seqhdr.MinFrameLen)
	dst, src := [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}
	n, err := seqhdr.PutControl(b, &dst, &src, &h)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// stripped is what seqhdr.Strip makes of frame.
func stripped(t testing.TB, frame []byte) []byte {
	t.Helper()
	b := bytes.Clone(frame)
	_, off, n, err := seqhdr.Strip(b, 0, len(b))
	if err != nil {
		t.Fatal(err)
	}
	return b[off : off+n]
}

// runLG runs the program on frame and returns its verdict and output.
func runLG(t testing.TB, p *PortProgram, frame []byte) (uint32, []byte) {
	t.Helper()
	opts := ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+64)}
	ret, err := p.Program().Run(&opts)
	if err != nil {
		t.Fatalf("test run on %d bytes: %v", len(frame), err)
	}
	return ret, opts.DataOut
}

func owned(serial uint64) uint64 { return LGOwned | serial }

// expectUntouched runs frame and checks that it went the usual way (no
// XSK in test_run: XDP_PASS), unchanged, and that lg_rx did not move.
func expectUntouched(t *testing.T, p *PortProgram, s *LGRx, name string, frame []byte) {
	t.Helper()
	point, ack, c := s.Point().Load(), s.PeerAck().Load(), s.Counters()
	ret, out := runLG(t, p, frame)
	if ret != xdpPass || !bytes.Equal(out, frame) {
		t.Errorf("%s: verdict %d (want XDP_PASS %d), frame changed %v", name, ret, xdpPass, !bytes.Equal(out, frame))
	}
	if got := s.Point().Load(); got != point {
		t.Errorf("%s: point moved from %#x to %#x", name, point, got)
	}
	if got := s.PeerAck().Load(); got != ack {
		t.Errorf("%s: peer_ack moved from %#x to %#x", name, ack, got)
	}
	if got := s.Counters(); got != c {
		t.Errorf("%s: counters moved from %+v to %+v", name, c, got)
	}
}

func TestLGRxInOrder(t *testing.T) {
	p, s := loadLGRx(t)
	if s2, err := p.LGRx(); err != nil || s2 != s {
		t.Fatalf("second LGRx() = %p, %v; want the first, %p", s2, err, s)
	}
	s.Point().Store(owned(5))
	ack := seqhdr.MakeSeq(3, true)
	f := lgData(t, 5, true, ack, 50)
	ret, out := runLG(t, p, f)
	if ret != xdpRedirect {
		t.Fatalf("in-order data: verdict %d, want XDP_REDIRECT", ret)
	}
	if want := stripped(t, f); !bytes.Equal(out, want) {
		t.Errorf("delivered frame\n%x\nwant seqhdr.Strip's\n%x", out, want)
	}
	if got := s.Point().Load(); got != owned(6) {
		t.Errorf("point %#x, want %#x", got, owned(6))
	}
	if got := s.PeerAck().Load(); got != LGAckValid|uint64(ack) {
		t.Errorf("peer_ack %#x, want %#x", got, LGAckValid|uint64(ack))
	}
	c := s.Counters()
	if c.Frames != 1 || c.Bytes != uint64(len(f)-8) || c.LastNs == 0 || c.Handovers != 0 || c.Missed != 0 || c.StripErr != 0 {
		t.Errorf("counters %+v after one frame of %d bytes", c, len(f))
	}

	// Without HasAck: delivered, peer_ack kept.
	f = lgData(t, 6, false, 0, 0)
	if ret, out = runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, stripped(t, f)) {
		t.Errorf("in-order data without ACK: verdict %d, stripped right %v", ret, bytes.Equal(out, stripped(t, f)))
	}
	if got := s.PeerAck().Load(); got != LGAckValid|uint64(ack) {
		t.Errorf("peer_ack %#x after a frame without ACK, want %#x kept", got, LGAckValid|uint64(ack))
	}
	// An ACK in era 0 replaces it.
	f = lgData(t, 7, true, 0xFFFF, 1)
	if ret, _ = runLG(t, p, f); ret != xdpRedirect {
		t.Errorf("frame 7: verdict %d", ret)
	}
	if got := s.PeerAck().Load(); got != LGAckValid|0xFFFF {
		t.Errorf("peer_ack %#x, want %#x", got, uint64(LGAckValid|0xFFFF))
	}
	c2 := s.Counters()
	if c2.Frames != 3 || c2.Bytes != c.Bytes+uint64(22-8+1+22-8) || c2.LastNs < c.LastNs || s.Point().Load() != owned(8) {
		t.Errorf("after three frames: counters %+v, point %#x", c2, s.Point().Load())
	}
}

func TestLGRxHoleHandsOver(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(owned(6))
	f := lgData(t, 8, true, 1, 20) // 6 and 7 lost
	ret, out := runLG(t, p, f)
	if ret == xdpRedirect || !bytes.Equal(out, f) {
		t.Fatalf("data past a hole: verdict %d, changed %v; want it passed on unchanged", ret, !bytes.Equal(out, f))
	}
	if got := s.Point().Load(); got != 6 {
		t.Errorf("point %#x, want 6 (Go's)", got)
	}
	if c := s.Counters(); c.Handovers != 1 || c.Frames != 0 {
		t.Errorf("counters %+v, want 1 handover, nothing delivered", c)
	}
	if s.PeerAck().Load() != 0 {
		t.Errorf("peer_ack %#x set by a frame not delivered", s.PeerAck().Load())
	}
	// Now Go's: even the expected frame (the retransmission's twin, a
	// late original) goes to Go, and no second handover is counted.
	expectUntouched(t, p, s, "expected frame while Go owns the point", lgData(t, 6, false, 0, 20))
	expectUntouched(t, p, s, "later frame while Go owns the point", lgData(t, 9, false, 0, 20))

	// A duplicate (behind the point) also hands over.
	s.Point().Store(owned(10))
	expectHandover := func(name string, f []byte) {
		t.Helper()
		before := s.Counters().Handovers
		point := s.Point().Load()
		if ret, out := runLG(t, p, f); ret == xdpRedirect || !bytes.Equal(out, f) {
			t.Errorf("%s: verdict %d, changed %v", name, ret, !bytes.Equal(out, f))
		}
		if got := s.Point().Load(); got != point&^LGOwned {
			t.Errorf("%s: point %#x, want %#x", name, got, point&^LGOwned)
		}
		if got := s.Counters().Handovers; got != before+1 {
			t.Errorf("%s: handovers %d, want %d", name, got, before+1)
		}
	}
	expectHandover("duplicate", lgData(t, 9, false, 0, 5))
	s.Point().Store(owned(10))
	expectHandover("other era", lgData(t, seqhdr.MakeSeq(10, true), false, 0, 5))
}

func TestLGRxGoOwnedUntouched(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(5)
	expectUntouched(t, p, s, "Go owns the point", lgData(t, 5, true, 2, 30))
}

func TestLGRxIneligibleUntouched(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(owned(5))
	retx := lgData(t, 5, true, 1, 30)
	seqhdr.SetRetx(retx, true)
	unseq := lgControl(t, seqhdr.Header{Type: seqhdr.TypeData, Unseq: true, HasAck: true, Ack: 4})
	reserved := lgData(t, 5, false, 0, 30)
	reserved[15] |= 0x40
	reserved2 := lgData(t, 5, false, 0, 30)
	reserved2[15] |= 0x80
	latestEra := lgData(t, 5, false, 0, 30)
	latestEra[15] |= seqhdr.FlagLatestEra
	version := lgData(t, 5, false, 0, 30)
	version[14] |= 0x10
	vlan := append([]byte(nil), lgData(t, 5, false, 0, 30)[:12]...)
	vlan = append(vlan, 0x81, 0x00, 0x00, 0x05)
	vlan = append(vlan, lgData(t, 5, false, 0, 30)[12:]...)
	notLink := testFrame(64)
	notLink[12], notLink[13] = 0x08, 0x00
	cases := []struct {
		name  string
		frame []byte
	}{
		{"retransmitted copy", retx},
		{"unsequenced data", unseq},
		{"reserved flag 0x40", reserved},
		{"reserved flag 0x80", reserved2},
		{"LatestEra on data", latestEra},
		{"version 1", version},
		{"VLAN-tagged", vlan},
		{"not a link frame", notLink},
		{"ACK", lgControl(t, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 4})},
		{"dummy", lgControl(t, seqhdr.Header{Type: seqhdr.TypeDummy, Seq: 5})},
		{"loss notification", lgControl(t, seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 5, Count: 1, Latest: 7})},
		{"pause", lgControl(t, seqhdr.Header{Type: seqhdr.TypePause, Pause: 1000})},
		{"resume", lgControl(t, seqhdr.Header{Type: seqhdr.TypeResume})},
	}
	for _, tc := range cases {
		expectUntouched(t, p, s, tc.name, tc.frame)
	}
	if got := s.Point().Load(); got != owned(5) {
		t.Errorf("point %#x, want %#x", got, owned(5))
	}
}

func TestLGRxEraWrap(t *testing.T) {
	p, s := loadLGRx(t)
	s.Adopted().Store(LGSeqMask)
	s.Point().Store(owned(LGSeqMask))
	last := seqhdr.MakeSeq(0xFFFF, true)
	if uint64(last) != LGSeqMask {
		t.Fatalf("seqhdr's era-1 0xFFFF is %#x", last)
	}
	for i, want := range []uint64{0, 1, 2} {
		seq := last.Add(i)
		f := lgData(t, seq, true, seq.Add(-3), 10)
		if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, stripped(t, f)) {
			t.Fatalf("serial %#x: verdict %d", seq, ret)
		}
		if got := s.Point().Load(); got != owned(want) {
			t.Errorf("after serial %#x: point %#x, want %#x", seq, got, owned(want))
		}
		if got := s.PeerAck().Load(); got != LGAckValid|uint64(seq.Add(-3)) {
			t.Errorf("after serial %#x: peer_ack %#x, want %#x", seq, got, LGAckValid|uint64(seq.Add(-3)))
		}
	}
}

func TestLGRxOffOrForward(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(owned(5))
	f := lgData(t, 5, true, 1, 40)
	if err := p.SetLGRx(false); err != nil {
		t.Fatal(err)
	}
	expectUntouched(t, p, s, "lg_rx 0", f)

	// Forward's fast path takes precedence: redirected whole, point untouched.
	if err := p.SetLGRx(true); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFast(true); err != nil {
		t.Fatal(err)
	}
	if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, f) {
		t.Errorf("fast on: verdict %d, changed %v; want forward's redirect of the whole frame", ret, !bytes.Equal(out, f))
	}
	if got := s.Point().Load(); got != owned(5) || s.Counters() != (LGRxCounters{}) {
		t.Errorf("fast on: point %#x, counters %+v", got, s.Counters())
	}
	if err := p.SetFast(false); err != nil {
		t.Fatal(err)
	}

	// A host port never runs the stage.
	if err := p.changeConf("host", func(c *portPortConf) { c.Role = roleHost }); err != nil {
		t.Fatal(err)
	}
	if ret, _ := runLG(t, p, f); ret != xdpDrop { // a host may not send the link ethertype
		t.Errorf("host port: verdict %d, want XDP_DROP", ret)
	}
	if got := s.Point().Load(); got != owned(5) {
		t.Errorf("host port: point %#x", got)
	}
}

func TestLGRxMissed(t *testing.T) {
	p, s := loadLGRx(t)
	if err := p.objs.FwdPort.Delete(uint32(0)); err != nil {
		t.Fatal(err)
	}
	s.Point().Store(owned(5))
	f := lgData(t, 5, false, 0, 40)
	ret, out := runLG(t, p, f)
	if ret != xdpPass || !bytes.Equal(out, f) {
		t.Errorf("no forward port: verdict %d, changed %v", ret, !bytes.Equal(out, f))
	}
	if got := s.Point().Load(); got != owned(5) {
		t.Errorf("point %#x, want %#x untouched", got, owned(5))
	}
	if c := s.Counters(); c.Missed != 1 || c.Frames != 0 || c.Handovers != 0 {
		t.Errorf("counters %+v, want 1 missed", c)
	}
}

func TestLGRxGoCAS(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(owned(7))
	// Go takes the point back (clears OWNED) by CAS: the next frame is Go's.
	if !s.Point().CompareAndSwap(owned(7), 7) {
		t.Fatal("CAS owned(7) -> 7 failed")
	}
	expectUntouched(t, p, s, "after Go took the point", lgData(t, 7, false, 0, 10))
	// Go hands it back at 7: delivered.
	if !s.Point().CompareAndSwap(7, owned(7)) {
		t.Fatal("CAS 7 -> owned(7) failed")
	}
	if ret, _ := runLG(t, p, lgData(t, 7, false, 0, 10)); ret != xdpRedirect {
		t.Errorf("after Go handed the point back: verdict %d", ret)
	}
	// The program's move is seen by Go's CAS: a CAS from the stale value fails.
	if s.Point().CompareAndSwap(owned(7), 7) {
		t.Error("CAS from the stale owned(7) succeeded after the program moved the point to 8")
	}
	if !s.Point().CompareAndSwap(owned(8), 8) {
		t.Errorf("CAS owned(8) -> 8 failed; point %#x", s.Point().Load())
	}
}

func TestLGRxShortAndGarbage(t *testing.T) {
	p, s := loadLGRx(t)
	s.Point().Store(owned(5))
	full := lgData(t, 5, true, 1, 0) // 22 bytes
	// Truncated data headers (test_run wants at least an Ethernet header).
	for n := 14; n < len(full); n++ {
		expectUntouched(t, p, s, "truncated", full[:n])
	}
	// The bare 22-byte header is a data frame with an empty payload: delivered.
	if ret, out := runLG(t, p, full); ret != xdpRedirect || !bytes.Equal(out, stripped(t, full)) {
		t.Errorf("22-byte data frame: verdict %d, out %x", ret, out)
	}
	if got := s.Point().Load(); got != owned(6) {
		t.Errorf("point %#x, want %#x", got, owned(6))
	}
}

// lgModel is the rule of lf_lg_rx for a link port with lg_rx on, a forward
// port set and queue 0: whether frame is delivered, and the point after it.
// It is linkguardian.FastPoint.Offer, the model the simulated link runs, so
// the program and the simulated-link suite share one rule.
func lgModel(frame []byte, point, adopted uint64) (deliver bool, next uint64) {
	fp := linkguardian.NewFastPoint()
	fp.Point.Store(point)
	fp.Adopted.Store(adopted)
	deliver = fp.Offer(frame)
	return deliver, fp.Point.Load()
}

// lgModelCRC is lgModel with the integrity check of mode m on
// (SetLGRxIntegrity): a frame that m.Check refuses, or shorter than a data
// header plus the trailer, goes the usual way, the point untouched; another
// is judged as the frame without its trailer, which a delivery removes.
func lgModelCRC(m linkcrc.Integrity, frame []byte, point, adopted uint64) (deliver bool, next uint64, body []byte) {
	n, ok := m.Check(frame)
	if !ok || len(frame) < 22+linkcrc.TrailerLen {
		return false, point, frame
	}
	deliver, next = lgModel(frame[:n], point, adopted)
	return deliver, next, frame[:n]
}

// TestLGRxRandomFrames runs random frames (valid data around the point,
// mutated headers, random bytes) against lgModel: the point moves only by
// +1 on a delivery, or loses OWNED on a handover, and a delivered frame is
// the frame minus its 8 header bytes. With an integrity check on (crc32c,
// csum), against lgModelCRC: most frames are sealed, some of them then have
// a bit or a byte changed, and a delivered frame also loses its trailer.
func TestLGRxRandomFrames(t *testing.T) {
	for _, m := range []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C, linkcrc.Csum} {
		t.Run("integrity="+m.String(), func(t *testing.T) { testLGRxRandomFrames(t, m) })
	}
}

func testLGRxRandomFrames(t *testing.T, m linkcrc.Integrity) {
	p, s := loadLGRx(t)
	if err := p.SetLGRxIntegrity(m); err != nil {
		t.Fatal(err)
	}
	crc := m != linkcrc.Off
	rng := rand.New(rand.NewPCG(1, 2))
	var delivered, handovers, corrupt uint64
	s.Adopted().Store(LGSeqMask - 100)
	s.Point().Store(owned(LGSeqMask - 100))
	for i := 0; i < 20000; i++ {
		point := s.Point().Load()
		if point&LGOwned == 0 && rng.IntN(4) == 0 {
			point = LGOwned | (point+uint64(rng.IntN(3))-1)&LGSeqMask
			if rng.IntN(2) == 0 { // with Wake a few frames ahead
				point |= linkguardian.FastWakeOn | (point+uint64(rng.IntN(4)))&LGSeqMask<<linkguardian.FastWakeShift
			}
			// Go hands the point back, Adopted its ackNo; sometimes an
			// older Adopted, about FastLead back (the lead bound).
			adopted := point & LGSeqMask
			if rng.IntN(4) == 0 {
				adopted = (adopted - linkguardian.FastLead + uint64(rng.IntN(3))) & LGSeqMask
			}
			s.Adopted().Store(adopted)
			s.Point().Store(point)
		}
		var f []byte
		switch rng.IntN(4) {
		case 0, 1: // data near the point, with an ACK or not
			seq := seqhdr.Seq(point & LGSeqMask).Add(rng.IntN(5) - 1)
			var ack seqhdr.Seq
			hasAck := rng.IntN(2) == 0
			if hasAck {
				ack = seqhdr.Seq(rng.Uint32() & LGSeqMask)
			}
			f = lgData(t, seq, hasAck, ack, rng.IntN(80))
		case 2: // the same, one header byte replaced
			seq := seqhdr.Seq(point & LGSeqMask).Add(rng.IntN(3) - 1)
			f = lgData(t, seq, true, 0, rng.IntN(40))
			f[12+rng.IntN(10)] = byte(rng.Uint32())
		default: // random bytes, sometimes a link ethertype
			f = make([]byte, 14+rng.IntN(60))
			for j := range f {
				f[j] = byte(rng.Uint32())
			}
			if rng.IntN(2) == 0 {
				binary.BigEndian.PutUint16(f[12:], seqhdr.EtherType)
			}
		}
		if crc && rng.IntN(8) != 0 { // most frames sealed
			f = sealed(t, m, f)
			switch rng.IntN(6) {
			case 0: // one bit flipped, header and trailer included
				f[rng.IntN(len(f))] ^= 1 << rng.IntN(8)
			case 1: // one byte replaced (sometimes by itself)
				f[rng.IntN(len(f))] = byte(rng.Uint32())
			}
		}
		var wantDeliver bool
		var wantNext uint64
		body := f // the frame as judged (without its trailer)
		if crc {
			wantDeliver, wantNext, body = lgModelCRC(m, f, point, s.Adopted().Load())
			if _, ok := m.Check(f); !ok {
				corrupt++
			}
		} else {
			wantDeliver, wantNext = lgModel(f, point, s.Adopted().Load())
		}
		wantAck := s.PeerAck().Load()
		if wantDeliver && body[15]&seqhdr.FlagHasAck != 0 {
			wantAck = LGAckValid | uint64(binary.BigEndian.Uint16(body[20:]))
			if body[15]&seqhdr.FlagAckEra != 0 {
				wantAck |= 1 << 16
			}
		}
		ret, out := runLG(t, p, f)
		if got := s.PeerAck().Load(); got != wantAck {
			t.Fatalf("frame %d %x: peer_ack %#x, want %#x", i, f, got, wantAck)
		}
		got := s.Point().Load()
		if got != wantNext {
			t.Fatalf("frame %d %x: point %#x -> %#x, model says %#x", i, f, point, got, wantNext)
		}
		if wantDeliver {
			delivered++
			want := append(append(bytes.Clone(body[:12]), body[18:20]...), body[22:]...)
			if ret != xdpRedirect || !bytes.Equal(out, want) {
				t.Fatalf("frame %d %x: verdict %d, out %x; want XDP_REDIRECT of %x", i, f, ret, out, want)
			}
		} else {
			if point&LGOwned != 0 && got != point {
				handovers++
			}
			if ret == xdpRedirect || !bytes.Equal(out, f) {
				t.Fatalf("frame %d %x: verdict %d, changed %v; model says not delivered", i, f, ret, !bytes.Equal(out, f))
			}
		}
	}
	c := s.Counters()
	t.Logf("20000 random frames: %d delivered, %d handovers, %d failing the check; counters %+v", delivered, handovers, corrupt, c)
	if c.Frames != delivered || c.Handovers != handovers || c.Missed != 0 || c.StripErr != 0 {
		t.Errorf("counters %+v, want %d frames, %d handovers", c, delivered, handovers)
	}
	if delivered < 500 || handovers < 500 || crc && corrupt < 2000 {
		t.Errorf("only %d deliveries, %d handovers and %d frames failing the check: the generator misses the cases", delivered, handovers, corrupt)
	}
}

func TestLGRxClose(t *testing.T) {
	p, _ := loadLGRx(t)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LGRx(); err == nil {
		t.Error("LGRx after Close succeeded")
	}
}

// TestLGRxConcurrentCAS races the program (test runs on this goroutine)
// with Go taking the point and handing it back by CAS on another goroutine
// (two CPUs make the race real): the program delivers a frame only at the
// serial the point has, each delivery moves it by one, a point Go holds is
// never moved by the program, and the counters add up.
func TestLGRxConcurrentCAS(t *testing.T) {
	p, s := loadLGRx(t)
	const start = LGSeqMask - 500
	s.Adopted().Store(start)
	s.Point().Store(owned(start))
	var stop, moved atomic.Bool
	var takes, lost atomic.Int64
	done := make(chan struct{})
	spin := func(n int) {
		for i := 0; i < n; i++ {
			_ = s.Point().Load()
		}
	}
	go func() {
		defer close(done)
		for !stop.Load() {
			v := s.Point().Load()
			if v&LGOwned == 0 {
				moved.Store(true) // only this goroutine clears OWNED, and it restores it
				return
			}
			if !s.Point().CompareAndSwap(v, v&^LGOwned) {
				lost.Add(1) // the program moved it first
				continue
			}
			takes.Add(1)
			spin(200)
			// Go hands it back at the serial it took it at.
			if !s.Point().CompareAndSwap(v&^LGOwned, v) {
				moved.Store(true)
				return
			}
			spin(200)
		}
	}()
	var delivered, passed int
	next := uint64(start)
	frames := make(map[uint64][]byte)
	for i := 0; i < 5000; i++ {
		f, ok := frames[next]
		if !ok {
			f = lgData(t, seqhdr.Seq(next), false, 0, 16)
			frames[next] = f
		}
		ret, _ := runLG(t, p, f)
		switch ret {
		case xdpRedirect:
			delivered++
			next = (next + 1) & LGSeqMask
		case xdpPass:
			passed++
		default:
			t.Fatalf("verdict %d", ret)
		}
		if v := s.Point().Load(); v&LGSeqMask != next {
			t.Fatalf("point %#x after %d deliveries, want serial %#x", v, delivered, next)
		}
	}
	stop.Store(true)
	<-done
	if moved.Load() {
		t.Fatal("the program moved a point Go held")
	}
	c := s.Counters()
	t.Logf("%d delivered, %d passed while Go held the point; Go took it %d times, lost %d CAS races to the program; counters %+v",
		delivered, passed, takes.Load(), lost.Load(), c)
	if c.Frames != uint64(delivered) || c.Handovers != 0 || c.Missed != 0 || c.StripErr != 0 {
		t.Errorf("counters %+v, want %d frames and nothing else", c, delivered)
	}
	if s.Point().Load() != owned(next) {
		t.Errorf("point %#x at the end, want %#x", s.Point().Load(), owned(next))
	}
	if delivered == 0 || passed == 0 {
		t.Logf("%d delivered, %d passed: the race did not happen both ways this time (busy machine?)", delivered, passed)
	}
}
