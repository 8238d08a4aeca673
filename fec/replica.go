package fec

// PerTransmission turns what a receiver counted into a loss monitor's input
// (lossmon.Monitor.Observe) when each of span sequence numbers was sent
// copies times: frames received (copies included) and transmissions lost.
// A receiver that counted only missing sequence numbers would see p^copies,
// the loss left after replication, and a policy fed that would stop
// replicating; this is the link's own loss p, whatever the copies.
func PerTransmission(copies int, span, frames uint64) (received, lost uint64) {
	sent := uint64(max(copies, 1)) * span
	if frames >= sent {
		return frames, 0
	}
	return frames, sent - frames
}
