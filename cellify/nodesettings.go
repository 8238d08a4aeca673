package cellify

// The credit settings the two edges of a VOQ must share: the source's lead
// (bytes it sends beyond its grant) and ahead (what its requests name
// beyond the backlog) are counted by the destination's scheduler with its
// own values (SchedConfig.Lead, Ahead). A destination with less counts
// credit as in flight that is not and takes the VOQ for late; one with
// more lets the sources overrun its window by the difference. Every credit
// frame carries its sender's settings; an edge counts the frames whose
// settings differ from its own and keeps, per peer, what it last heard, so
// that each change is reported once.

// nodeSettings is an edge's view of its peers' credit settings.
type nodeSettings struct {
	own   CreditSettings
	peers []CreditSettings // per edge id: the settings its frames carried last
	found uint64           // differing settings heard (a peer's new ones)
	peer  EdgeID           // the last peer found with other settings than own
}

func (s *nodeSettings) init(c CreditClientConfig, edges int) {
	s.own = CreditSettings{Lead: uint32(min(c.Lead, 1<<32-1)), Ahead: uint32(min(c.Ahead, 1<<32-1))}
	s.peers = make([]CreditSettings, edges)
	for i := range s.peers {
		s.peers[i] = s.own
	}
}

// heardSettings takes the credit settings of a frame from edge id.
func (n *Node) heardSettings(id EdgeID, set CreditSettings) {
	s := &n.settings
	if set != s.own {
		n.Stats.SettingsDiffer++
	}
	if int(id) >= len(s.peers) || s.peers[id] == set {
		return
	}
	s.peers[id] = set
	if set != s.own {
		s.found++
		s.peer = id
	}
}

// SettingsDiffer returns how many times an edge was found with credit
// settings other than this edge's (it grows with each peer's change: report
// when it does), the last such edge, its settings and this edge's.
func (n *Node) SettingsDiffer() (found uint64, peer EdgeID, theirs, ours CreditSettings) {
	s := &n.settings
	if s.found == 0 {
		return 0, 0, CreditSettings{}, s.own
	}
	return s.found, s.peer, s.peers[s.peer], s.own
}
