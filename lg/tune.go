package lg

// Runtime tuning, called by the dataplane between iterations as its loss
// monitor and retransmission-delay measurements change.

// SetCopies sets N, the retransmitted copies per lost frame (Equation 2), for
// notifications from now on. n < 1 is taken as 1.
func (s *Sender) SetCopies(n int) {
	s.cfg.Copies = max(n, 1)
}

// Copies is the N in force.
func (s *Sender) Copies() int { return s.cfg.Copies }

// SetTimers sets the receiver's re-notification interval and ackNoTimeout
// (see Timers) for holes from now on.
func (r *Receiver) SetTimers(renotify, ackNoTimeout int64) {
	if ackNoTimeout > 0 {
		r.cfg.AckNoTimeout = ackNoTimeout
	}
	if renotify >= 0 {
		r.cfg.RenotifyInterval = renotify
	}
}

// Timers returns the receiver's re-notification interval and ackNoTimeout.
func (r *Receiver) Timers() (renotify, ackNoTimeout int64) {
	return r.cfg.RenotifyInterval, r.cfg.AckNoTimeout
}
