package cellsim

// Event kinds.
const (
	evWake       uint8 = iota // a node's deadline
	evTxDone                  // a link direction finished serializing its head frame
	evArrive                  // the head of a direction's in-flight FIFO arrives
	evHostTx                  // a host finished sending a frame to its edge
	evEgressTx                // an edge's host port finished sending a frame to the host
	evFlow                    // a traffic source's timer
	evAck                     // a window flow's acknowledgement (a = seq)
	evLGRetx                  // an lg link retransmits a lost frame (a = handle, b = len, c = epoch)
	evCall                    // a scripted action (i = index in Sim.calls)
	evLossReport              // the loss monitor's period
)

type event struct {
	at   int64
	seq  uint64
	kind uint8
	i    int32
	a, b int64
	c    int64
}

// eventHeap is a binary min-heap on (at, seq): events at the same time run
// in the order they were scheduled, so a run is deterministic.
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	e := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return e
}
