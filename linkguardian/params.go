package linkguardian

import "math"

// Parameter derivation after the paper's Appendix B.1. All times are
// nanoseconds, sizes bytes, rates bits per second.

// AckNoTimeout returns maxRetxDelay × safety: the timeout must exceed the
// largest measured retransmission delay (loss detected → retransmission
// received; EvRecovered.Nanos). The paper measured 6 µs and set 7.5 µs
// (safety 1.25).
func AckNoTimeout(maxRetxDelay int64, safety float64) int64 {
	return int64(math.Ceil(float64(maxRetxDelay) * safety))
}

// Timers returns the receiver's RenotifyInterval and AckNoTimeout and a
// sender RetxHoldoff for a link whose measured maximum retransmission delay is
// maxRetxDelay. A notification is repeated every maxRetxDelay × safety, at
// most renotifyRounds times, before the hole is skipped: the timeout is
// (renotifyRounds+1) × maxRetxDelay × safety. With renotifyRounds = 0 this is
// the paper's setting (no re-notification). The holdoff is half the interval.
func Timers(maxRetxDelay int64, safety float64, renotifyRounds int) (renotify, ackNoTimeout, holdoff int64) {
	step := AckNoTimeout(maxRetxDelay, safety)
	ackNoTimeout = int64(renotifyRounds+1) * step
	if renotifyRounds > 0 {
		renotify = step
	}
	return renotify, ackNoTimeout, step / 2
}

// ResumeThreshold returns the bytes that drain from the reorder buffer at
// drainRate during tFlightResume (receiver decides to resume → traffic
// arrives again), rounded up. The paper measured 1.9 µs at a 100G drain rate
// and set 40 KB, i.e. with a margin: pass a margin factor ≥ 1.
func ResumeThreshold(tFlightResume int64, drainRate float64, margin float64) int {
	return int(math.Ceil(float64(tFlightResume) * 1e-9 * drainRate / 8 * margin))
}

// PauseThreshold returns resume + 2 MTU (the fixed hysteresis of §3.3).
func PauseThreshold(resume, mtu int) int { return resume + 2*mtu }

// PauseQuanta converts a pause duration into 802.1Qbb quanta (512 bit times
// at linkRate), saturating at 65535.
func PauseQuanta(d int64, linkRate float64) uint16 {
	q := math.Ceil(float64(d) * 1e-9 * linkRate / 512)
	if q > 65535 {
		return 65535
	}
	if q < 0 {
		return 0
	}
	return uint16(q)
}

// QuantaDuration converts 802.1Qbb quanta at linkRate into nanoseconds.
func QuantaDuration(q uint16, linkRate float64) int64 {
	return int64(math.Ceil(float64(q) * 512 / linkRate * 1e9))
}
