package wire

import (
	"testing"
)

func TestEchoCalibRoundTrip(t *testing.T) {
	b := roundTrip(t, Echo{Reply: true, Seq: 7, FMSend: 123456789, HostRx: 5, HostTx: 9}, EchoLen, DecodeEcho)
	roundTrip(t, Calib{DelayEst: 42_000}, CalibMsgLen, DecodeCalib)
	var gc Calib
	if err := DecodeCalib(b, &gc); err == nil {
		t.Error("an echo decoded as a calib")
	}
}

// FuzzEcho: DecodeEcho never panics; what it accepts re-encodes the same
// (but for the pad, which it ignores).
func FuzzEcho(f *testing.F) {
	fuzzCodec(f, Echo{Seq: 3, FMSend: 99}, EchoLen, DecodeEcho, never)
}

// FuzzCalib: DecodeCalib never panics; what it accepts re-encodes the same.
func FuzzCalib(f *testing.F) {
	fuzzCodec(f, Calib{DelayEst: 50_000}, CalibMsgLen, DecodeCalib, always)
}
