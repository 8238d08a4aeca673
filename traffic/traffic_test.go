package traffic

import (
	"bytes"
	"net"
	"testing"
)

func testTemplate(size int) Template {
	return Template{
		Dst:    net.HardwareAddr{2, 0, 0, 0, 0, 2},
		Src:    net.HardwareAddr{2, 0, 0, 0, 0, 1},
		Stream: 7,
		Size:   size,
	}
}

func TestWriteParseRoundTrip(t *testing.T) {
	for _, size := range []int{MinSize, DefaultLen, 1500} {
		tm := testTemplate(size)
		if err := tm.check(); err != nil {
			t.Fatal(err)
		}
		b := bytes.Repeat([]byte{0xAA}, size)
		tm.write(b, 123456789)
		stream, seq, ok := Parse(b)
		if !ok || stream != 7 || seq != 123456789 {
			t.Fatalf("size %d: Parse = %d %d %v", size, stream, seq, ok)
		}
		if !bytes.Equal(b[0:6], tm.Dst) || !bytes.Equal(b[6:12], tm.Src) {
			t.Fatalf("size %d: addresses not written", size)
		}
		if size > MinSize && b[size-1] != 0 {
			t.Fatalf("size %d: padding not cleared", size)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tm := testTemplate(DefaultLen)
	b := make([]byte, DefaultLen)
	tm.write(b, 1)
	for name, mut := range map[string]func([]byte) []byte{
		"short":     func(b []byte) []byte { return b[:MinSize-1] },
		"ethertype": func(b []byte) []byte { b[12] = 0x08; b[13] = 0x00; return b },
		"magic":     func(b []byte) []byte { b[offMagic] ^= 1; return b },
	} {
		c := append([]byte(nil), b...)
		if _, _, ok := Parse(mut(c)); ok {
			t.Errorf("%s: Parse accepted a frame that is not a test frame", name)
		}
	}
	if err := (&Template{Size: MinSize - 1, Dst: tm.Dst, Src: tm.Src}).check(); err == nil {
		t.Error("a frame size below MinSize was accepted")
	}
}

// The checker behind the stress experiment's verdicts: it must find exactly
// the missing, duplicated and reordered numbers.
func TestCheckerCounts(t *testing.T) {
	tm := testTemplate(DefaultLen)
	c := newChecker(7, 100) // not a multiple of 64 on purpose
	b := make([]byte, DefaultLen)
	feed := func(seq uint64) { tm.write(b, seq); c.account(b) }
	for seq := uint64(0); seq < 100; seq++ {
		switch seq {
		case 10, 11, 99: // lost
		case 20: // arrives late
		default:
			feed(seq)
		}
	}
	feed(20)  // out of order
	feed(5)   // duplicate, also out of order
	feed(500) // beyond the expected range
	other := make([]byte, DefaultLen)
	c.account(other) // not a test frame
	tm.Stream = 8
	feed(1) // another stream

	r := c.Report()
	want := Report{Received: 99, Unique: 97, Duplicates: 1, OutOfOrder: 2, Missing: 3, Other: 3}
	if r != want {
		t.Fatalf("report %+v, want %+v", r, want)
	}
}

func FuzzParse(f *testing.F) {
	tm := testTemplate(DefaultLen)
	b := make([]byte, DefaultLen)
	tm.write(b, 42)
	f.Add(b)
	f.Add([]byte{})
	f.Add(b[:MinSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		stream, seq, ok := Parse(b)
		if !ok {
			return
		}
		// Whatever Parse accepts re-encodes to the same header.
		t2 := Template{Dst: net.HardwareAddr(b[0:6]), Src: net.HardwareAddr(b[6:12]), Stream: stream, Size: MinSize}
		c := make([]byte, MinSize)
		t2.write(c, seq)
		if !bytes.Equal(c, b[:MinSize]) {
			t.Fatalf("re-encoded %x, got %x", c, b[:MinSize])
		}
	})
}
