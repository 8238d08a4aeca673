package gate

import (
	"encoding/binary"

	"github.com/linkfabric/linkfabric/tdma/wire"
)

// Verdict is the TDMA exit gate's rule (bpf.TDMAGate, bpf/c/tdmagate.c) in
// Go, the model its program is tested against: for frame leaving its host
// at now (CLOCK_MONOTONIC ns) with the gate's share of the guard in per
// mille, whether it is a TDMA data frame the gate judges (data), whether it
// goes back to its host (ret), and if so whether because it was released
// after its window's close or its lease (afterClose) rather than leaving
// before its slot's start plus the guard on the FM's timeline (when the
// last slot's frames may still be in the switch) or after its slot's end
// plus the gate's share of the guard (the slot's end: the earlier of the
// sender's estimate and the FM's, which the trailer carries on the one
// clock all namespaces read here; in a fabric of machines that clock would
// be PTP's). A data frame the exit gate judges
// gets the time it did (Entry): when it entered the switch, or when it was
// stopped (Stopped names why).
func Verdict(frame []byte, now int64, sharePermille uint32) (data, ret, afterClose bool) {
	h, t, ok := decodeData(frame)
	if !ok {
		return false, false, false
	}
	if t.Close == wire.WinUnknown || t.Due == wire.WinUnknown {
		return true, false, false
	}
	if t.Close < 0 || t.Lease != wire.WinUnknown && t.Lease < 0 {
		return true, true, true
	}
	guard := uint64(t.GuardUs) * 1000
	end := h.SendTS + int64(t.Due) - int64(guard)
	if t.FMEnd != wire.WinUnknown {
		fmEnd := h.SendTS + int64(t.FMEnd)
		if now < fmEnd-int64(t.SlotUs)*1000+int64(guard) {
			return true, true, false
		}
		end = min(end, fmEnd)
	}
	deadline := end + int64(guard*uint64(sharePermille)/1000)
	return true, now > deadline, false
}

// Arrival is the arrival gate's rule (lf_tdma_arrive, at the receiver's
// end of its veth) in Go: whether frame, reaching its receiver at now, is
// a gated TDMA data frame not returned by a gate (data), and whether it
// goes back (held): it arrives later than Due less margin ns, in the
// next slot, whose sender may be sending to the same port.
func Arrival(frame []byte, now int64, margin uint32) (data, held bool) {
	h, t, ok := decodeData(frame)
	if !ok || h.Flags&wire.DataReturned != 0 || t.Close == wire.WinUnknown || t.Due == wire.WinUnknown {
		return false, false
	}
	return true, now+int64(margin) > Due(h.SendTS, &t)
}

// decodeData decodes the data header and window trailer of frame, an
// Ethernet frame; ok is false unless it is a TDMA data frame with both.
func decodeData(frame []byte) (h wire.DataHdr, t wire.WinTrailer, ok bool) {
	const eth = 14
	ok = len(frame) >= eth+wire.DataHdrLen+wire.WinTrailerLen && binary.BigEndian.Uint16(frame[12:]) == wire.DataEtherType &&
		wire.DecodeDataHdr(frame[eth:], &h) == nil && wire.DecodeWinTrailer(frame[eth+wire.DataHdrLen:], &t) == nil
	return h, t, ok
}
