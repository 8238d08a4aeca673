package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// integrityWorker is a worker with a UMEM and no sockets: enough for the
// integrity hooks (sealTx, checkRx). The link port carries the check unless
// mode is Off.
func integrityWorker(t *testing.T, mode linkcrc.Integrity) *Worker {
	t.Helper()
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 4096, FrameCount: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	d := &Dataplane{cfg: Config{Link: LinkConfig{Integrity: mode}}, umem: u}
	w := &Worker{d: d, umem: u, refs: newFrameRefs(u), integrity: &IntegrityStats{}, sealed: make([]bool, 2)}
	w.sealed[PortLink] = mode != linkcrc.Off
	return w
}

// sealOne seals a copy of d for port and returns it.
func sealOne(w *Worker, port int, d xdp.Desc) xdp.Desc {
	l := []xdp.Desc{d}
	w.sealTx(port, l)
	return l[0]
}

// checkOne checks d as received on the link port; false if it was dropped.
func checkOne(w *Worker, d *xdp.Desc) bool {
	got := w.checkRx(PortLink, []xdp.Desc{*d})
	if len(got) == 0 {
		return false
	}
	*d = got[0]
	return true
}

// linkFrames builds one frame of every kind a link port sends, each at the
// start (DataOffset) of its own UMEM frame: name → descriptor.
func linkFrames(t *testing.T, w *Worker) map[string]xdp.Desc {
	t.Helper()
	dst, src := [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}
	out := map[string]xdp.Desc{}
	alloc := func() (uint64, []byte) {
		a, ok := w.refs.alloc()
		if !ok {
			t.Fatal("UMEM exhausted")
		}
		a += uint64(w.umem.DataOffset())
		return a, w.umem.Frame(a)
	}
	ipv4 := func(b []byte, n int) {
		copy(b[0:6], dst[:])
		copy(b[6:12], src[:])
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		for i := 14; i < n; i++ {
			b[i] = byte(i * 7)
		}
	}
	// Data frames: a host frame with the link header inserted (headroom).
	data := func(name string, n int, h seqhdr.Header) {
		a, _ := alloc()
		a += seqhdr.MaxOverhead
		ipv4(w.umem.Frame(a), n)
		buf := w.umem.Frame(a - seqhdr.MaxOverhead)
		off, m, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, n, &h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = xdp.Desc{Addr: a - seqhdr.MaxOverhead + uint64(off), Len: uint32(m)}
	}
	data("data", 1000, seqhdr.Header{Type: seqhdr.TypeData, Seq: 77, HasAck: true, Ack: 12})
	data("data-64B", 64-seqhdr.MaxOverhead, seqhdr.Header{Type: seqhdr.TypeData, Seq: 78})
	data("retx", 1500, seqhdr.Header{Type: seqhdr.TypeData, Retx: true, Seq: 79, HasAck: true, Ack: 13})
	data("unseq", 300, seqhdr.Header{Type: seqhdr.TypeData, Unseq: true, HasAck: true, Ack: 14})
	ctrl := func(name string, h seqhdr.Header) {
		a, b := alloc()
		n, err := seqhdr.PutControl(b, &dst, &src, &h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = xdp.Desc{Addr: a, Len: uint32(n)}
	}
	ctrl("ack", seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 99})
	ctrl("loss", seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 100, Count: 3, Latest: 104, HasAck: true, Ack: 99})
	ctrl("dummy", seqhdr.Header{Type: seqhdr.TypeDummy, Seq: 105})
	a, b := alloc()
	f := pfc.NewPFC(src, 1, [pfc.NumClasses]uint16{100})
	n, err := f.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	out["pfc"] = xdp.Desc{Addr: a, Len: uint32(n)}
	a, b = alloc()
	ipv4(b, 600)
	out["passthrough"] = xdp.Desc{Addr: a, Len: 600}
	return out
}

// TestIntegrityEveryFrameType: every kind of frame a link port sends (data,
// a retransmitted copy, unsequenced data, explicit ACK, loss notification,
// dummy, PFC, a frame without link header) is sealed at transmit and passes
// the check at receive with its bytes and length intact; a flip of any one
// of its bits (as the impairer and a real link make them) fails the check,
// is counted and frees the frame. A retransmitted copy whose flags and ACK
// are rewritten is resealed at its next transmission.
func TestIntegrityEveryFrameType(t *testing.T) {
	w := integrityWorker(t, linkcrc.CRC32C)
	frames := linkFrames(t, w)
	for name, d := range frames {
		orig := append([]byte(nil), w.umem.Bytes(d.Addr, d.Len)...)
		s := sealOne(w, PortLink, d)
		if s.Len != d.Len+linkcrc.TrailerLen || w.integrity.NoRoom.Load() != 0 {
			t.Fatalf("%s: sealed length %d of %d (no room %d)", name, s.Len, d.Len, w.integrity.NoRoom.Load())
		}
		r := s
		if !checkOne(w, &r) || r.Len != d.Len || string(w.umem.Bytes(r.Addr, r.Len)) != string(orig) {
			t.Fatalf("%s: the sealed frame failed the check or came back changed (len %d)", name, r.Len)
		}
		if name != "pfc" && name != "passthrough" {
			if _, err := seqhdr.ParseFrame(w.umem.Bytes(r.Addr, r.Len)); err != nil {
				t.Errorf("%s: link header after the check: %v", name, err)
			}
		}
		b := w.umem.Bytes(s.Addr, s.Len)
		idx := w.refs.idx(s.Addr)
		for bit := 0; bit < 8*len(b); bit++ {
			before := w.integrity.Corrupt.Load()
			b[bit/8] ^= 1 << (bit % 8)
			r := s
			w.refs.hold(s.Addr)
			if checkOne(w, &r) {
				t.Fatalf("%s: a flip of bit %d passed the check", name, bit)
			}
			if w.integrity.Corrupt.Load() != before+1 || w.refs.held[idx] {
				t.Fatalf("%s: a corrupt frame was not counted (%d) or not freed (held %v)", name, w.integrity.Corrupt.Load()-before, w.refs.held[idx])
			}
			w.refs.free.Pop() // take the freed frame back: the test still uses it
			b[bit/8] ^= 1 << (bit % 8)
		}
	}
	// A retransmission: the core rewrites the flag and the ACK in place;
	// the old trailer no longer matches, the new transmission's does.
	d := frames["data"]
	b := w.umem.Bytes(d.Addr, d.Len)
	seqhdr.SetRetx(b, true)
	seqhdr.SetAck(b, 500)
	r := xdp.Desc{Addr: d.Addr, Len: d.Len + linkcrc.TrailerLen}
	w.refs.hold(d.Addr)
	if checkOne(w, &r) {
		t.Fatal("a rewritten frame passed with the trailer of its first transmission")
	}
	w.refs.free.Pop()
	if r := sealOne(w, PortLink, d); !checkOne(w, &r) {
		t.Fatal("a retransmitted copy sealed at its transmission failed the check")
	}
}

// TestIntegrityHostAndOff: frames to the host port get no trailer, a frame
// with no room after it in its UMEM frame is counted, and with the check
// off nothing is added or verified.
func TestIntegrityHostAndOff(t *testing.T) {
	w := integrityWorker(t, linkcrc.CRC32C)
	d := linkFrames(t, w)["passthrough"]
	if s := sealOne(w, PortHost, d); s.Len != d.Len {
		t.Errorf("a frame to the host port got a trailer")
	}
	full := xdp.Desc{Addr: d.Addr, Len: w.umem.MaxFrameLen()}
	if s := sealOne(w, PortLink, full); s.Len != full.Len || w.integrity.NoRoom.Load() != 1 {
		t.Errorf("a frame filling its UMEM frame: len %d, no room counted %d", s.Len, w.integrity.NoRoom.Load())
	}

	w = integrityWorker(t, linkcrc.Off)
	d = linkFrames(t, w)["data"]
	r := sealOne(w, PortLink, d)
	w.umem.Bytes(r.Addr, r.Len)[20] ^= 1
	if r.Len != d.Len || !checkOne(w, &r) || r.Len != d.Len {
		t.Errorf("--integrity off changed or checked the frame")
	}
}

// TestIntegrityOtherCheck: a HELLO from a peer with another --integrity
// (another trailer, or none) fails this end's check but still reaches the
// session, without its trailer, counted apart, so that the session can name
// the mismatch; only when it verifies under the check it says its sender
// runs. Other frames sealed so, and HELLOs whose word does not match their
// trailer, are corrupt as before, and so is every single-bit flip of a
// HELLO sealed with this end's own check (the one that turns its word into
// "off" included: a HELLO from an end without a check has no trailer).
func TestIntegrityOtherCheck(t *testing.T) {
	w := integrityWorker(t, linkcrc.CRC32C)
	dst, src := [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}
	hello := func(says linkcrc.Integrity, sealed linkcrc.Integrity) xdp.Desc {
		a, ok := w.refs.alloc()
		if !ok {
			t.Fatal("UMEM exhausted")
		}
		a += uint64(w.umem.DataOffset())
		h := seqhdr.Hello{Epoch: 7, InitSeq: 1, Window: 64, Lanes: 1, Protect: 3, MTU: 1500, Speed: 1000, Caps: seqhdr.CapsSet | uint8(says)}
		n, err := seqhdr.PutHello(w.umem.Frame(a), &dst, &src, &h)
		if err != nil {
			t.Fatal(err)
		}
		if sealed != linkcrc.Off {
			n, _ = sealed.Seal(w.umem.Frame(a), n)
		}
		return xdp.Desc{Addr: a, Len: uint32(n)}
	}
	for _, c := range []struct {
		says, sealed linkcrc.Integrity
		pass         bool
		len          uint32
	}{
		{linkcrc.Csum, linkcrc.Csum, true, seqhdr.MinFrameLen},
		{linkcrc.Off, linkcrc.Off, true, seqhdr.MinFrameLen},
		// An end without a check sends HELLOs of MinFrameLen bytes.
		{linkcrc.Off, linkcrc.Csum, false, 0},
		{linkcrc.Csum, linkcrc.Off, false, 0},
		{linkcrc.CRC32C, linkcrc.Off, false, 0},
		{linkcrc.CRC32C, linkcrc.Csum, false, 0},
	} {
		d := hello(c.says, c.sealed)
		other, corrupt := w.integrity.OtherCheck.Load(), w.integrity.Corrupt.Load()
		r := d
		got := checkOne(w, &r)
		if got != c.pass || got && (r.Len != c.len || w.integrity.OtherCheck.Load() != other+1) ||
			!got && w.integrity.Corrupt.Load() != corrupt+1 {
			t.Errorf("a HELLO saying %v sealed with %v: passed %v (len %d), other check +%d, corrupt +%d",
				c.says, c.sealed, got, r.Len, w.integrity.OtherCheck.Load()-other, w.integrity.Corrupt.Load()-corrupt)
		}
		if got {
			w.refs.release(r.Addr)
		}
	}
	// Not a session frame: corrupt, whatever it carries.
	d := linkFrames(t, w)["data"]
	n, _ := linkcrc.Csum.Seal(w.umem.Frame(d.Addr), int(d.Len))
	if r := (xdp.Desc{Addr: d.Addr, Len: uint32(n)}); checkOne(w, &r) {
		t.Error("a data frame sealed with csum passed a crc32c end")
	}

	s := hello(linkcrc.CRC32C, linkcrc.CRC32C)
	b := w.umem.Bytes(s.Addr, s.Len)
	idx := w.refs.idx(s.Addr)
	passed := 0
	for bit := 0; bit < 8*len(b); bit++ {
		b[bit/8] ^= 1 << (bit % 8)
		r := s
		w.refs.hold(s.Addr)
		if checkOne(w, &r) {
			passed++
			h, err := seqhdr.ParseHello(w.umem.Bytes(r.Addr, r.Len))
			t.Errorf("a flip of bit %d passed as %+v (%v)", bit, h, err)
		} else if w.refs.held[idx] {
			t.Fatalf("a flip of bit %d: dropped but not freed", bit)
		} else {
			w.refs.free.Pop()
		}
		b[bit/8] ^= 1 << (bit % 8)
	}
	if passed != 0 {
		t.Errorf("%d single-bit flips of a sealed HELLO passed", passed)
	}
}
