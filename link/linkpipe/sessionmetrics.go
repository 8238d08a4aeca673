package linkpipe

import (
	"strconv"

	"github.com/linkfabric/linkfabric/metrics"
)

// SessionInfoLabels are the labels linkfabric_link_session_info carries
// besides its constant ones (RegisterSession, and the cells' links).
var SessionInfoLabels = []string{"state", "mismatch", "integrity", "peer_epoch", "peer_node"}

// RegisterSession exports the link session st: its state as a 0/1 gauge
// (linkfabric_link_session_up) and as an info metric whose labels say the
// state, the peer's epoch and why the peer does not fit (mismatch), and
// its counters. labels are the constant labels (port and lane).
func RegisterSession(r *metrics.Registry, st *SessionStats, labels ...string) error {
	var errs metrics.Errs
	add := errs.Add
	add(r.GaugeFunc("linkfabric_link_session_up", "1 if the link session is up (both ends agreed), else 0.", func() float64 {
		if st.Snapshot().State == "up" {
			return 1
		}
		return 0
	}, labels...))
	add(r.InfoFunc("linkfabric_link_session_info", "The link session's state (down, hello-sent, up, mismatch), why the peer does not fit, the integrity check agreed and the peer's epoch and node (value 1).",
		SessionInfoLabels, func() []string {
			s := st.Snapshot()
			integrity, peer := "", ""
			if s.Agreed != nil {
				integrity = s.Agreed.Integrity
			}
			if s.PeerEpoch != 0 {
				peer = strconv.FormatUint(s.PeerEpoch, 16)
			}
			return []string{s.State, s.Mismatch, integrity, peer, ""}
		}, labels...))
	add(r.GaugeFunc("linkfabric_link_session_agreed_lanes", "Lanes the link session agreed (0 when not up).", func() float64 {
		if a := st.Snapshot().Agreed; a != nil {
			return float64(a.Lanes)
		}
		return 0
	}, labels...))
	for _, e := range []struct {
		event string
		f     func(s *SessionSnapshot) uint64
	}{
		{"up", func(s *SessionSnapshot) uint64 { return s.Counters.Ups }},
		{"down", func(s *SessionSnapshot) uint64 { return s.Counters.Downs }},
		{"reset", func(s *SessionSnapshot) uint64 { return s.Counters.Resets }},
		{"mismatch", func(s *SessionSnapshot) uint64 { return s.Counters.Mismatches }},
		{"peer_restart", func(s *SessionSnapshot) uint64 { return s.Counters.PeerRestarts }},
		{"peer_timeout", func(s *SessionSnapshot) uint64 { return s.Counters.PeerTimeouts }},
		{"foreign", func(s *SessionSnapshot) uint64 { return s.Counters.Foreign }},
		{"malformed", func(s *SessionSnapshot) uint64 { return s.Counters.Malformed }},
		{"inconsistent", func(s *SessionSnapshot) uint64 { return s.Counters.Inconsistent }},
		{"node_collision", func(s *SessionSnapshot) uint64 { return s.Counters.NodeCollisions }},
	} {
		add(r.CounterFunc("linkfabric_link_session_events_total", "Link session events: up, down, reset, mismatch (a peer whose settings do not fit), peer_restart, peer_timeout, foreign (a session frame from another MAC), malformed, inconsistent, node_collision.",
			func() uint64 { s := st.Snapshot(); return e.f(&s) }, append(labels, "event", e.event)...))
	}
	add(r.CounterFunc("linkfabric_link_session_rx_not_agreed_total", "Link frames dropped: no agreement with their sender.", func() uint64 { return st.Snapshot().Counters.RxNotAgreed }, labels...))
	add(r.CounterFunc("linkfabric_link_session_host_dropped_total", "Host frames dropped while waiting for the link session to come up.", func() uint64 { return st.Snapshot().Held.Dropped }, labels...))
	add(r.CounterFunc("linkfabric_link_session_host_unprotected_total", "Host frames passed unprotected while the link session was not up.", func() uint64 { return st.Snapshot().Held.Passed }, labels...))
	return errs.Err()
}
