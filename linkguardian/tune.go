package linkguardian

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

// SetAckDelay sets AckDelay (d ≥ 0) for ACKs from now on.
func (r *Receiver) SetAckDelay(d int64) { r.cfg.AckDelay = max(d, 0) }

// AckDelay returns the AckDelay in force.
func (r *Receiver) AckDelay() int64 { return r.cfg.AckDelay }

// SetThresholds sets the reorder-buffer bytes at which the receiver pauses
// and resumes the sender (Algorithm 2). It is ignored unless
// 0 ≤ resume < pause, or when backpressure is off (PauseThreshold 0). A
// pause in force ends at the next Poll if the buffer is at or below the new
// resume threshold.
func (r *Receiver) SetThresholds(resume, pause int) {
	if r.cfg.PauseThreshold <= 0 || resume < 0 || pause <= resume {
		return
	}
	r.cfg.ResumeThreshold, r.cfg.PauseThreshold = resume, pause
}

// Thresholds returns the resume and pause thresholds in force.
func (r *Receiver) Thresholds() (resume, pause int) {
	return r.cfg.ResumeThreshold, r.cfg.PauseThreshold
}

// Timers returns the receiver's re-notification interval and ackNoTimeout.
func (r *Receiver) Timers() (renotify, ackNoTimeout int64) {
	return r.cfg.RenotifyInterval, r.cfg.AckNoTimeout
}

const maxTime = int64(1<<63 - 1)

// NextDeadline is the earliest time at which Poll has timer work (an explicit
// ACK or its repeat, a re-notification or ackNoTimeout, a pause refresh, a
// dummy while idle or while the credit window is full, the end of a pause) if
// no frame arrives before: a worker may sleep until then. It is math.MaxInt64
// when the port is quiet. queueEmpty is as for Poll.
func (p *Endpoint) NextDeadline(now int64, queueEmpty bool) int64 {
	d := maxTime
	if r := p.R; r != nil {
		if r.missing > 0 {
			d = min(d, r.nextCheck)
		}
		if r.pendingAck {
			d = min(d, r.pendingSince+r.cfg.AckDelay)
		}
		if r.ackRepeatAt != 0 {
			d = min(d, r.ackRepeatAt)
		}
		if r.paused {
			d = min(d, r.lastPause+r.cfg.PauseDuration/2)
		}
		if r.handed {
			d = min(d, r.fastCheckAt)
		}
	}
	if s := p.S; s != nil {
		d = min(d, s.nextTimer(now, queueEmpty))
	}
	return d
}
