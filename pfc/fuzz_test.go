package pfc

import (
	"bytes"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to the
// same field bytes (except the reserved high octet of the PFC class-enable
// vector, which Decode ignores), and decodes again to the same Frame.
func FuzzDecode(f *testing.F) {
	buf := make([]byte, FrameLen)
	for _, fr := range []Frame{
		NewPFC(srcA, 0x09, [8]uint16{0: 0xFFFF, 3: 0x1234}),
		NewPFC(srcA, 0xFF, [8]uint16{}),
		NewPause(srcB, 0x0100),
	} {
		fr.Encode(buf)
		f.Add(bytes.Clone(buf))
		f.Add(bytes.Clone(buf[:PauseLen]))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 15))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		if err := Decode(b, &fr); err != nil {
			return
		}
		out := make([]byte, FrameLen)
		n, err := fr.Encode(out)
		if err != nil {
			t.Fatalf("decoded frame %+v does not encode: %v", fr, err)
		}
		fields := PauseLen
		if fr.Opcode == OpPFC {
			fields = PFCLen
		}
		want := bytes.Clone(b[:fields])
		if fr.Opcode == OpPFC {
			want[16] = 0 // reserved octet
		}
		if !bytes.Equal(out[:fields], want) {
			t.Fatalf("re-encoded fields differ:\n in %x\nout %x", want, out[:fields])
		}
		var again Frame
		if err := Decode(out[:n], &again); err != nil || again != fr {
			t.Fatalf("second decode: %v %+v vs %+v", err, again, fr)
		}
	})
}
