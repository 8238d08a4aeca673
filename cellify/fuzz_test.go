package cellify

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// sameBody reports whether two frames agree on what the cell-family encoders
// own: bytes 12..14 and 22..n (the MACs are the caller's, 15..21 the link
// layer's).
func sameBody(a, b []byte, n int) bool {
	return len(a) >= n && len(b) >= n && bytes.Equal(a[12:15], b[12:15]) && bytes.Equal(a[Off:n], b[Off:n])
}

// FuzzCell: ParseCell never panics; an accepted cell re-encodes to the same
// bytes, survives DecHops and SetFCI as the same cell with one hop less and
// FCI set, and a Reassembler takes it without panicking.
func FuzzCell(f *testing.F) {
	for _, h := range []CellHeader{
		{Dst: 1, Src: 2, Class: 3, Hops: 4, Port: 5, Seq: 0, First: 0},
		{Dst: 0xFFFF, Src: 1, Class: 7, FCI: true, Hops: 15, Port: 255, Seq: 1 << 31, First: NoRecord, RecNo: 9},
		{Dst: 3, Src: 7, Class: 0, Hops: 1, Seq: 5, First: 3, RecNo: 1},
	} {
		b := make([]byte, 200)
		n, _ := PutCell(b, &h, append(record(1, 20), 0, 0))
		f.Add(b[:n])
	}
	f.Add(make([]byte, CellPayloadOffset))
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzCell(t, frame)
		if len(frame) >= CellPayloadOffset {
			// Past the checksum, so that the field checks are explored too.
			frame = bytes.Clone(frame)
			fixSum(frame)
			fuzzCell(t, frame)
		}
	})
}

func fuzzCell(t *testing.T, frame []byte) {
	h, err := ParseCell(frame)
	if err != nil {
		return
	}
	payload := frame[CellPayloadOffset : CellPayloadOffset+int(h.Len)]
	out := make([]byte, CellFrameLen(int(h.Len)))
	h2 := h
	if _, err := PutCell(out, &h2, payload); err != nil {
		t.Fatalf("re-encode of %+v: %v", h, err)
	}
	if !sameBody(out, frame, CellPayloadOffset+int(h.Len)) || h2 != h {
		t.Fatalf("re-encode differs: %x vs %x", out, frame)
	}
	fr := bytes.Clone(frame)
	ok := DecHops(fr)
	if ok != (h.Hops > 1) {
		t.Fatalf("DecHops at %d hops: %v", h.Hops, ok)
	}
	SetFCI(fr)
	g, err := ParseCell(fr)
	want := h
	want.FCI = true
	if ok {
		want.Hops--
	}
	if err != nil || g != want {
		t.Fatalf("after DecHops/SetFCI: %+v %v, want %+v", g, err, want)
	}
	r, _ := NewReassembler(ReasmConfig{Window: 8}, func(StreamKey, []byte) {})
	r.Receive(0, frame)
	r.Receive(1, frame)
	r.Poll(1 << 40)
}

// FuzzCredit: ParseCredit never panics; an accepted frame re-encodes to the
// same bytes.
func FuzzCredit(f *testing.F) {
	b := make([]byte, 400)
	n, _ := PutCredit(b, false, 1, 2, []CreditEntry{{Port: 1, Class: 2, Total: 3}})
	f.Add(bytes.Clone(b[:n]))
	n, _ = PutCredit(b, true, 0xFFFF, 9, []CreditEntry{{Port: 1, Class: 7, Total: 1 << 63}, {Port: 255, Total: 0}, {Class: 1, Total: 12345}})
	f.Add(bytes.Clone(b[:n]))
	f.Add(b[:Off+creditHeadLen])
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzSealed(t, frame, creditHeadLen, creditSumAt, func(b []byte) int { return int(b[Off+4]) * CreditEntryLen }, fuzzCredit)
	})
}

// fuzzSealed runs check on frame, then, if it holds a header of headLen,
// on a copy whose CRC-32C (at Off+sumAt, over the header's bytes before it
// and the body the header claims, bodyLen, as far as the frame goes) is
// made right, so that the parser gets past its checksum.
func fuzzSealed(t *testing.T, frame []byte, headLen, sumAt int, bodyLen func([]byte) int, check func(*testing.T, []byte)) {
	check(t, frame)
	if len(frame) < Off+headLen {
		return
	}
	frame = bytes.Clone(frame)
	end := min(len(frame), Off+headLen+bodyLen(frame))
	binary.BigEndian.PutUint32(frame[Off+sumAt:], sum2(frame[Off:Off+sumAt], frame[Off+headLen:end]))
	check(t, frame)
}

func fuzzCredit(t *testing.T, frame []byte) {
	c, err := ParseCredit(frame)
	if err != nil {
		return
	}
	es := make([]CreditEntry, c.N)
	for i := range es {
		es[i] = c.Entry(i)
	}
	out := make([]byte, CreditFrameLen(c.N))
	n, err := PutCreditEpochs(out, c.Grant, c.Src, c.Dst, c.Epochs, c.Settings, es)
	if err != nil {
		t.Fatalf("re-encode of %+v: %v", c, err)
	}
	if !sameBody(out, frame, min(n, Off+creditHeadLen+c.N*CreditEntryLen)) {
		t.Fatalf("re-encode differs: %x vs %x", out[:n], frame)
	}
}

// FuzzReach: ParseReach never panics; an accepted frame re-encodes to the
// same bytes and Reachable agrees with the bitmap.
func FuzzReach(f *testing.F) {
	b := make([]byte, 400)
	n, _ := PutReach(b, &Reach{Node: 1, Role: RoleEdge, Edges: 16, Bitmap: []byte{2, 0x80}})
	f.Add(bytes.Clone(b[:n]))
	n, _ = PutReach(b, &Reach{Node: 7, Role: RoleFabric, Faulty: true, Seq: 99, Edges: 3, Bitmap: []byte{6}})
	f.Add(bytes.Clone(b[:n]))
	n, _ = PutReach(b, &Reach{Node: 7, Role: RoleFabric, Edges: 0})
	f.Add(bytes.Clone(b[:n]))
	n, _ = PutReach(b, &Reach{Node: 9, Role: RoleFabric, Class: 2, Classes: true, Edges: 10, Bitmap: []byte{2, 0, 6, 0, 14, 3}})
	f.Add(bytes.Clone(b[:n]))
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzSealed(t, frame, reachHeadLen, reachSumAt, func(b []byte) int {
			return reachBitmaps(b[Off+3]&ReachClasses != 0) * ((int(binary.BigEndian.Uint16(b[Off+8:])) + 7) / 8)
		}, fuzzReach)
	})
}

func fuzzReach(t *testing.T, frame []byte) {
	r, err := ParseReach(frame)
	if err != nil {
		return
	}
	out := make([]byte, ReachFrameLen(r.Edges, r.Classes))
	if _, err := PutReach(out, &r); err != nil {
		t.Fatalf("re-encode of %+v: %v", r, err)
	}
	if !sameBody(out, frame, Off+reachHeadLen+len(r.Bitmap)) {
		t.Fatalf("re-encode differs: %x vs %x", out, frame)
	}
	nb := (r.Edges + 7) / 8
	for k := LossClass(1); k <= MaxLossClasses; k++ {
		base := 0
		if r.Classes {
			base = int(k-1) * nb
		}
		for e := range EdgeID(r.Edges + 9) {
			want := int(e) < r.Edges && r.Bitmap[base+int(e/8)]>>(e%8)&1 == 1
			if r.ReachableIn(k, e) != want || e == 0 && want {
				t.Fatalf("ReachableIn(%d, %d) = %v", k, e, r.ReachableIn(k, e))
			}
		}
	}
}

// FuzzReasm feeds a Reassembler a sequence of cells built from the input
// (seq step, first-record offset, record number, payload length, payload)
// at advancing times: it never panics, holds at most its window and delivers
// only frames within the record bounds, never more bytes than it received.
func FuzzReasm(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 62, 0, 60, 1, 2, 3})
	f.Add([]byte{2, 0, 0, 1, 30, 0, 60, 0, 0, 0xFF, 0xFF, 0, 1, 40, 5, 5, 5})
	f.Add(bytes.Repeat([]byte{1, 0xFF, 0xFF, 3, 50}, 20))
	f.Fuzz(func(t *testing.T, in []byte) {
		const window = 8
		var got uint64
		r, _ := NewReassembler(ReasmConfig{Window: window, MaxPayload: 200, Timeout: 50, LostWait: 15}, func(_ StreamKey, fr []byte) {
			if len(fr) < MinRecordFrame || len(fr) > MaxRecordFrame {
				t.Fatalf("delivered a %d-byte frame", len(fr))
			}
			got += uint64(len(fr))
		})
		buf := make([]byte, 512)
		var seq uint32
		var fed uint64
		now := int64(0)
		for len(in) >= 5 {
			seq += uint32(int8(in[0]))
			h := CellHeader{Dst: 1, Src: 2, Hops: 1, Seq: seq, First: binary.BigEndian.Uint16(in[1:]), RecNo: uint16(in[3])}
			n := int(in[4])
			in = in[5:]
			p := in[:min(n, len(in))]
			in = in[len(p):]
			if len(p) == 0 || h.First != NoRecord && int(h.First) >= len(p) {
				continue
			}
			l, err := PutCell(buf, &h, p)
			if err != nil {
				t.Fatal(err)
			}
			now += 10
			r.Receive(now, buf[:l])
			if h.RecNo%7 == 3 { // a link layer reports cells lost for good
				r.Lost(now, int(h.RecNo%5))
			}
			r.Poll(now)
			fed += uint64(len(p))
			if st := r.Stats(); st.Buffered > window {
				t.Fatalf("holds %d cells", st.Buffered)
			}
		}
		r.Poll(now + 1000)
		if st := r.Stats(); got != st.DeliveredBytes || got > fed || st.Buffered != 0 {
			t.Fatalf("delivered %d bytes of %d fed, stats %+v", got, fed, st)
		}
	})
}
