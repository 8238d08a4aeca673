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
// the same bytes, a version 1 schedule to the same schedule (the seeds:
// staggered, aligned, aligned in version 1, and staggered with slot
// budgets).
func FuzzSchedule(f *testing.F) {
	s := sampleSchedule()
	s.Flags = ScheduleStagger
	fuzzCodec(f, s, MaxScheduleLen, DecodeSchedule, func(in []byte) bool { return in[2] != 1 }, scheduleV1(sampleSchedule()),
		roundTrip(f, sampleSchedule(), MaxScheduleLen, DecodeSchedule), roundTrip(f, budgetSchedule(), MaxScheduleLen, DecodeSchedule))
}

// FuzzReport: DecodeReport never panics; what it accepts re-encodes to the
// same bytes.
func FuzzReport(f *testing.F) {
	r := Report{Host: 1, Round: 2, Seq: 3, N: 2}
	r.Queued[1] = 99
	fuzzCodec(f, r, 512, DecodeReport, always)
}

// FuzzDataHdr: DecodeDataHdr never panics; what it accepts re-encodes to the
// same bytes.
func FuzzDataHdr(f *testing.F) {
	fuzzCodec(f, DataHdr{Src: 1, Dst: 2, Seq: 3}, DataHdrLen, DecodeDataHdr, always)
}
