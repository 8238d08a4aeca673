package wire

import (
	"bytes"
	"testing"
)

// FuzzGrant: DecodeGrant never panics; what it accepts re-encodes to the
// same PFC fields and trailer and decodes again to the same Grant.
func FuzzGrant(f *testing.F) {
	b := make([]byte, 60)
	var g Grant
	LeaseGrant(&g, hostMAC, fmMAC, 2, 5e6, 1e8, sampleTrailer())
	g.Encode(b)
	f.Add(bytes.Clone(b))
	f.Add(bytes.Clone(b[:40]))
	f.Fuzz(func(t *testing.T, in []byte) {
		var g Grant
		if err := DecodeGrant(in, &g); err != nil {
			return
		}
		out := make([]byte, 60)
		if _, err := g.Encode(out); err != nil {
			t.Fatalf("decoded grant does not encode: %v", err)
		}
		var again Grant
		if err := DecodeGrant(out, &again); err != nil || again != g {
			t.Fatalf("second decode: %v\n%+v\n%+v", err, again, g)
		}
	})
}

// FuzzSchedule: DecodeSchedule never panics; what it accepts re-encodes to
// the same bytes.
func FuzzSchedule(f *testing.F) {
	s := sampleSchedule()
	b := make([]byte, 512)
	n, _ := s.Encode(b)
	f.Add(bytes.Clone(b[:n]))
	f.Fuzz(func(t *testing.T, in []byte) {
		var s Schedule
		if err := DecodeSchedule(in, &s); err != nil {
			return
		}
		out := make([]byte, s.Len())
		if _, err := s.Encode(out); err != nil {
			t.Fatalf("decoded schedule does not encode: %v", err)
		}
		if !bytes.Equal(out, in[:s.Len()]) {
			t.Fatalf("re-encoded schedule differs:\n in %x\nout %x", in[:s.Len()], out)
		}
	})
}

// FuzzReport: DecodeReport never panics; what it accepts re-encodes to the
// same bytes.
func FuzzReport(f *testing.F) {
	r := Report{Host: 1, Round: 2, Seq: 3, N: 2}
	r.Queued[1] = 99
	b := make([]byte, 512)
	n, _ := r.Encode(b)
	f.Add(bytes.Clone(b[:n]))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r Report
		if err := DecodeReport(in, &r); err != nil {
			return
		}
		out := make([]byte, r.Len())
		if _, err := r.Encode(out); err != nil {
			t.Fatalf("decoded report does not encode: %v", err)
		}
		if !bytes.Equal(out, in[:r.Len()]) {
			t.Fatalf("re-encoded report differs")
		}
	})
}

// FuzzDataHdr: DecodeDataHdr never panics; what it accepts re-encodes to the
// same bytes.
func FuzzDataHdr(f *testing.F) {
	h := DataHdr{Src: 1, Dst: 2, Seq: 3}
	b := make([]byte, DataHdrLen)
	h.Encode(b)
	f.Add(bytes.Clone(b))
	f.Fuzz(func(t *testing.T, in []byte) {
		var h DataHdr
		if err := DecodeDataHdr(in, &h); err != nil {
			return
		}
		out := make([]byte, DataHdrLen)
		h.Encode(out)
		if !bytes.Equal(out, in[:DataHdrLen]) {
			t.Fatalf("re-encoded header differs")
		}
	})
}
