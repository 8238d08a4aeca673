package seqhdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func sampleHeaders() []Header {
	return []Header{
		{Type: TypeData, Seq: MakeSeq(7, false), EtherType: 0x0800},
		{Type: TypeData, Retx: true, Seq: MakeSeq(0xffff, true), EtherType: 0x86DD, HasAck: true, Ack: MakeSeq(3, true)},
		{Type: TypeData, Unseq: true, EtherType: 0x0806, HasAck: true, Ack: MakeSeq(65000, false)},
		{Type: TypeAck, HasAck: true, Ack: MakeSeq(12, true)},
		{Type: TypeLoss, Seq: MakeSeq(65534, true), Count: 5, Latest: MakeSeq(3, false), HasAck: true, Ack: MakeSeq(65533, true)},
		{Type: TypeLoss, Seq: MakeSeq(1, false), Count: 1, Latest: MakeSeq(3, false)},
		{Type: TypeDummy, Seq: MakeSeq(99, true)},
		{Type: TypeDummy, Seq: MakeSeq(99, false), HasAck: true, Ack: MakeSeq(1, false)},
		{Type: TypePause, Pause: 200_000},
		{Type: TypeResume},
	}
}

// Every type that is not LinkGuardian's is rejected by Parse, every type that
// is not the session's by ParseHello: reserved numbers are bad frames until
// their mechanism has a decoder.
func TestTypeSpacePartition(t *testing.T) {
	for ty := Type(0); ty < NumTypes; ty++ {
		b := make([]byte, MinFrameLen)
		b[12], b[13], b[14] = 0x88, 0xB5, byte(ty)
		_, errLG := Parse(b[MACLen:])
		_, errS := ParseHello(b)
		if ty.IsLG() == (errLG == ErrType) || ty.IsSession() == (errS == ErrType) || (ty.IsLG() && ty.IsSession()) {
			t.Errorf("type %d (%v): Parse %v, ParseHello %v", ty, ty, errLG, errS)
		}
		if got, ok := FrameType(b); !ok || got != ty {
			t.Errorf("FrameType %v %v", got, ok)
		}
	}
	if (&Header{Type: TypePause}).validate() == nil || (&Header{Type: TypeResume, Pause: 1}).validate() == nil {
		t.Error("a pause needs a duration and a resume has none")
	}
}

func TestHelloRoundTrip(t *testing.T) {
	src, dst := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	h := Hello{Ack: true, Epoch: 1 << 40, Echo: 3, InitSeq: MakeSeq(9, true), Window: 2048, Lanes: 2, Protect: ProtectTx | 0x10, MTU: 1500, Speed: 25000}
	b := make([]byte, MinFrameLen)
	if n, err := PutHello(b, &dst, &src, &h); err != nil || n != MinFrameLen {
		t.Fatal(n, err)
	}
	got, err := ParseHello(b)
	if err != nil || got != h {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []Hello{{}, {Epoch: 1, Window: 1, Lanes: 1, MTU: 1500, Speed: 1, InitSeq: Space}, {Epoch: 1, Window: 1, Lanes: 1, MTU: 1500, Speed: 1, Protect: 0x30}} {
		if _, err := PutHello(b, &dst, &src, &bad); err == nil {
			t.Errorf("PutHello accepted %+v", bad)
		}
	}
}

// TestHelloReport: a HELLO with a report (mode fec) round-trips; one
// without leaves the report bytes zero and parses without it; a report
// with reserved bytes set, no copies or a rate above 1 is refused.
func TestHelloReport(t *testing.T) {
	src, dst := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	h := Hello{Epoch: 5, Echo: 6, InitSeq: 7, Window: 1024, Lanes: 1, Protect: ProtectTx | ProtectRx | ProtectFEC, MTU: 1500, Speed: 10000,
		HasReport: true, Report: Report{RxLoss: 2_999_000, RxBurst: 256, TxN: 14, TxCopies: 3}}
	b := make([]byte, MinFrameLen)
	if _, err := PutHello(b, &dst, &src, &h); err != nil {
		t.Fatal(err)
	}
	if got, err := ParseHello(b); err != nil || got != h {
		t.Fatalf("report round trip: %+v %v, want %+v", got, err, h)
	}
	b[MACLen+HelloLen+ReportLen-1] = 1
	if _, err := ParseHello(b); err == nil {
		t.Error("a report with a reserved byte set was accepted")
	}
	plain := h
	plain.HasReport, plain.Report = false, Report{}
	if _, err := PutHello(b, &dst, &src, &plain); err != nil {
		t.Fatal(err)
	}
	if got, err := ParseHello(b); err != nil || got != plain || !bytes.Equal(b[MACLen+HelloLen:], make([]byte, MinFrameLen-MACLen-HelloLen)) {
		t.Fatalf("HELLO without a report: %+v %v, padding %x", got, err, b[MACLen+HelloLen:])
	}
	for _, r := range []Report{{RxLoss: 1e9 + 1, TxCopies: 1}, {RxLoss: RxLossUnknown}} {
		bad := h
		bad.Report = r
		if _, err := PutHello(b, &dst, &src, &bad); err == nil {
			t.Errorf("PutHello accepted report %+v", r)
		}
	}
}

// TestHelloCaps: Caps (byte 58) round-trips with and without a report; a
// HELLO from a sender that does not set it (byte 58 zero) parses with
// Caps 0, also when cut after its HelloLen bytes; reserved bits, integrity
// 3, bits without CapsSet and a nonzero byte 59 are refused.
func TestHelloCaps(t *testing.T) {
	src, dst := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	h := Hello{Epoch: 5, Echo: 6, InitSeq: 7, Window: 1024, Lanes: 1, Protect: ProtectTx | ProtectRx, MTU: 1500, Speed: 10000,
		Caps: CapsSet | 2 | CapsFastSend}
	b := make([]byte, MinFrameLen+4)
	for _, report := range []bool{false, true} {
		h.HasReport = report
		if report {
			h.Report = Report{RxLoss: 7, TxCopies: 1}
		}
		if _, err := PutHello(b, &dst, &src, &h); err != nil {
			t.Fatal(err)
		}
		if b[58] != h.Caps || b[59] != 0 {
			t.Fatalf("Caps at %x, want %x 00", b[58:60], h.Caps)
		}
		// An integrity trailer after the frame is ignored.
		copy(b[MinFrameLen:], []byte{0xde, 0xad, 0xbe, 0xef})
		if got, err := ParseHello(b); err != nil || got != h {
			t.Fatalf("report %v: %+v %v, want %+v", report, got, err, h)
		}
	}
	old := h
	old.HasReport, old.Report, old.Caps = false, Report{}, 0
	PutHello(b, &dst, &src, &old)
	if got, err := ParseHello(b); err != nil || got.Caps != 0 {
		t.Fatalf("a HELLO without Caps: %+v %v", got, err)
	}
	if got, err := ParseHello(b[:MACLen+HelloLen]); err != nil || got != old {
		t.Fatalf("a HELLO cut after its fields: %+v %v", got, err)
	}
	for _, c := range []uint8{CapsSet | 0x08, CapsSet | 3, 2, CapsFastSend} {
		bad := h
		bad.Caps = c
		if _, err := PutHello(b, &dst, &src, &bad); err == nil {
			t.Errorf("PutHello accepted Caps %#x", c)
		}
		PutHello(b, &dst, &src, &h)
		b[58] = c
		if _, err := ParseHello(b); err == nil {
			t.Errorf("ParseHello accepted Caps %#x", c)
		}
	}
	PutHello(b, &dst, &src, &h)
	b[59] = 1
	if _, err := ParseHello(b); err == nil {
		t.Error("ParseHello accepted byte 59 set")
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range sampleHeaders() {
		var b [32]byte
		n, err := h.Put(b[:])
		if err != nil {
			t.Fatalf("Put(%+v): %v", h, err)
		}
		if n != h.WireLen() {
			t.Fatalf("Put wrote %d, WireLen %d", n, h.WireLen())
		}
		got, err := Parse(b[:n])
		if err != nil {
			t.Fatalf("Parse(%x): %v", b[:n], err)
		}
		if got != h {
			t.Fatalf("round trip: got %+v want %+v", got, h)
		}
		if _, err := Parse(b[:n-1]); !errors.Is(err, ErrShort) {
			t.Fatalf("Parse of truncated header: %v, want ErrShort", err)
		}
	}
}

func TestByteLayout(t *testing.T) {
	h := Header{Type: TypeLoss, Seq: MakeSeq(0x1234, true), Count: 3, HasAck: true, Ack: MakeSeq(0x1233, false), Latest: MakeSeq(0x1238, true)}
	var b [12]byte
	if _, err := h.Put(b[:]); err != nil {
		t.Fatal(err)
	}
	want := []byte{0x88, 0xB5, 0x03, FlagEra | FlagHasAck | FlagLatestEra, 0x12, 0x34, 0x00, 0x03, 0x12, 0x33, 0x12, 0x38}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("layout %x, want %x", b, want)
	}
}

func TestParseErrors(t *testing.T) {
	good := func() []byte {
		b := make([]byte, 10)
		h := Header{Type: TypeData, Seq: 5, EtherType: 0x0800}
		h.Put(b)
		return b
	}
	cases := []struct {
		name string
		mut  func(b []byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:3] }, ErrShort},
		{"ethertype", func(b []byte) []byte { b[1] = 0xB6; return b }, ErrNotLink},
		{"version", func(b []byte) []byte { b[2] = 0x11; return b }, ErrVersion},
		{"type0", func(b []byte) []byte { b[2] = 0; return b }, ErrType},
		{"type9-reserved", func(b []byte) []byte { b[2] = 9; return b }, ErrType},
		{"type7-session", func(b []byte) []byte { b[2] = 7; return b }, ErrType},
		{"reserved", func(b []byte) []byte { b[3] = 0x80; return b }, ErrFlags},
		{"ackera-without-ack", func(b []byte) []byte { b[3] = FlagAckEra; return b }, ErrFlags},
		{"ack-field-without-flag", func(b []byte) []byte { b[9] = 1; return b }, ErrField},
		{"latestera-on-data", func(b []byte) []byte { b[3] = FlagLatestEra; return b }, ErrFlags},
		{"unseq-without-ack", func(b []byte) []byte { b[3] = FlagUnseq; b[4], b[5] = 0, 0; return b }, ErrFlags},
		{"ack-type-without-ack", func(b []byte) []byte { b[2] = 2; b[6], b[7] = 0, 0; b[4], b[5] = 0, 0; return b }, ErrField},
		{"retx-on-dummy", func(b []byte) []byte { b[2] = 4; b[6], b[7] = 0, 0; b[3] = FlagRetx; return b }, ErrFlags},
		{"loss-short", func(b []byte) []byte { b[2] = 3; return b }, ErrShort},
	}
	for _, c := range cases {
		_, err := Parse(c.mut(good()))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v want %v", c.name, err, c.want)
		}
	}
}

func testFrame(n int, et uint16) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(i*7 + 3)
	}
	binary.BigEndian.PutUint16(f[12:], et)
	return f
}

func TestInsertStripRoundTrip(t *testing.T) {
	for _, et := range []uint16{0x0800, 0x86DD, 0x0806, 0x8100, 0x0001} {
		for _, n := range []int{14, 60, 1514} {
			orig := testFrame(n, et)
			buf := make([]byte, 64+n)
			copy(buf[64:], orig)
			h := Header{Type: TypeData, Seq: MakeSeq(0xfffe, true), HasAck: true, Ack: MakeSeq(4, false)}
			off, ln, err := Insert(buf, 64, n, &h)
			if err != nil {
				t.Fatal(err)
			}
			if off != 64-MaxOverhead || ln != n+MaxOverhead {
				t.Fatalf("Insert returned %d,%d", off, ln)
			}
			if !bytes.Equal(buf[off:off+12], orig[:12]) || !bytes.Equal(buf[off+DataOffset:off+ln], orig[14:]) {
				t.Fatal("Insert corrupted MACs or payload")
			}
			got, err := ParseFrame(buf[off : off+ln])
			if err != nil || got.EtherType != et || got.Seq != h.Seq || got.Ack != h.Ack {
				t.Fatalf("ParseFrame after Insert: %+v %v", got, err)
			}
			SetRetx(buf[off:], true)
			SetAck(buf[off:], MakeSeq(9, true))
			got, _ = ParseFrame(buf[off : off+ln])
			if !got.Retx || got.Ack != MakeSeq(9, true) {
				t.Fatalf("SetRetx/SetAck: %+v", got)
			}
			sh, off2, ln2, err := Strip(buf, off, ln)
			if err != nil {
				t.Fatal(err)
			}
			if off2 != 64 || ln2 != n || sh.Seq != h.Seq {
				t.Fatalf("Strip returned %d,%d %+v", off2, ln2, sh)
			}
			if !bytes.Equal(buf[off2:off2+ln2], orig) {
				t.Fatalf("strip did not restore the frame byte for byte")
			}
		}
	}
}

func TestInsertErrors(t *testing.T) {
	buf := make([]byte, 100)
	h := Header{Type: TypeData}
	if _, _, err := Insert(buf, 4, 60, &h); !errors.Is(err, ErrHeadroom) {
		t.Fatalf("got %v", err)
	}
	if _, _, err := Insert(buf, 8, 13, &h); !errors.Is(err, ErrShort) {
		t.Fatalf("got %v", err)
	}
	binary.BigEndian.PutUint16(buf[20:], EtherType)
	if _, _, err := Insert(buf, 8, 60, &h); !errors.Is(err, ErrEtherType) {
		t.Fatalf("got %v", err)
	}
	a := Header{Type: TypeAck, HasAck: true}
	if _, _, err := Insert(buf, 8, 60, &a); !errors.Is(err, ErrNotData) {
		t.Fatalf("got %v", err)
	}
}

func TestPutControl(t *testing.T) {
	dst := [6]byte{1, 2, 3, 4, 5, 6}
	src := [6]byte{7, 8, 9, 10, 11, 12}
	b := bytes.Repeat([]byte{0xee}, 64)
	h := Header{Type: TypeLoss, Seq: 3, Count: 2, Latest: 6}
	n, err := PutControl(b, &dst, &src, &h)
	if err != nil || n != MinFrameLen {
		t.Fatal(n, err)
	}
	if !bytes.Equal(b[:6], dst[:]) || !bytes.Equal(b[6:12], src[:]) {
		t.Fatal("MACs")
	}
	for _, c := range b[MACLen+2+LossHeaderLen : n] {
		if c != 0 {
			t.Fatal("padding not zero")
		}
	}
	got, err := ParseFrame(b[:n])
	if err != nil || got != h {
		t.Fatal(got, err)
	}
}

func TestSerial(t *testing.T) {
	a := MakeSeq(0xffff, false)
	b := a.Next()
	if b != MakeSeq(0, true) || !b.Era() || b.Num() != 0 {
		t.Fatalf("wrap into era 1: %x", b)
	}
	if !Less(a, b) || Diff(b, a) != 1 || Diff(a, b) != -1 {
		t.Fatal("compare across era")
	}
	c := MakeSeq(0xffff, true).Next()
	if c != 0 || !Less(MakeSeq(0xffff, true), c) {
		t.Fatal("wrap back to era 0")
	}
	if Diff(MakeSeq(10, false), MakeSeq(65530, true)) != 16 {
		t.Fatal(Diff(MakeSeq(10, false), MakeSeq(65530, true)))
	}
	if Seq(5).Add(-7) != Space-2 || Seq(Space-2).Add(7) != 5 {
		t.Fatal("Add")
	}
	for _, s := range []Seq{0, 1, 0xffff, 0x10000, Space - 1} {
		for _, d := range []int{0, 1, 100, Half - 1, -1, -Half} {
			if Diff(s.Add(d), s) != d {
				t.Fatalf("Diff(%d+%d)", s, d)
			}
		}
	}
	if !LessEq(3, 3) || LessEq(4, 3) {
		t.Fatal("LessEq")
	}
}
