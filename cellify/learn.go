package cellify

// MACTable maps host MAC addresses to the (edge, host port) they are behind,
// learned like a switch learns: from the source MACs of frames that arrive in
// cells (and of local host ports, if the caller teaches them). Entries age
// out; the table is bounded. It does not allocate after NewMACTable.
type MACTable struct {
	max int
	age int64
	m   map[[6]byte]macEntry
	st  LearnStats
}

type macEntry struct {
	seen int64
	edge EdgeID
	port uint8
}

// Dest is where a destination MAC goes: one edge's host port, or everywhere.
type Dest struct {
	Edge  EdgeID
	Port  uint8
	Flood bool // broadcast, multicast, unknown or aged-out unicast
}

// LearnStats counts what a MACTable did. Entries is a current value.
type LearnStats struct {
	Learned uint64 // new entries
	Moved   uint64 // known MACs seen behind another edge or port
	Refused uint64 // new MACs not learned: table full of live entries
	BadSrc  uint64 // group (multicast) source MACs ignored
	Expired uint64 // entries removed for age
	Hits    uint64
	Floods  uint64
	Entries uint64
}

// evictScan bounds the entries Learn looks at for an expired one when the
// table is full.
const evictScan = 8

// NewMACTable returns a table of at most size entries (at least 1) that
// forgets an entry not refreshed for age ns.
func NewMACTable(size int, age int64) *MACTable {
	size = max(size, 1)
	return &MACTable{max: size, age: age, m: make(map[[6]byte]macEntry, size)}
}

// isGroup reports a multicast or broadcast address.
func isGroup(mac *[6]byte) bool { return mac[0]&1 != 0 }

// Learn records that mac is behind (edge, port) at time now.
func (t *MACTable) Learn(now int64, mac [6]byte, edge EdgeID, port uint8) {
	if isGroup(&mac) {
		t.st.BadSrc++
		return
	}
	if e, ok := t.m[mac]; ok {
		if e.edge != edge || e.port != port {
			t.st.Moved++
		}
		t.m[mac] = macEntry{seen: now, edge: edge, port: port}
		return
	}
	if len(t.m) >= t.max && !t.evictOne(now) {
		t.st.Refused++
		return
	}
	t.m[mac] = macEntry{seen: now, edge: edge, port: port}
	t.st.Learned++
}

// evictOne removes one expired entry among a few; false if none was found.
func (t *MACTable) evictOne(now int64) bool {
	n := 0
	for k, e := range t.m {
		if now-e.seen >= t.age {
			delete(t.m, k)
			t.st.Expired++
			return true
		}
		if n++; n == evictScan {
			break
		}
	}
	return false
}

// Lookup returns where frames to mac go at time now.
func (t *MACTable) Lookup(now int64, mac [6]byte) Dest {
	if !isGroup(&mac) {
		if e, ok := t.m[mac]; ok {
			if now-e.seen < t.age {
				t.st.Hits++
				return Dest{Edge: e.edge, Port: e.port}
			}
			delete(t.m, mac)
			t.st.Expired++
		}
	}
	t.st.Floods++
	return Dest{Flood: true}
}

// Seen returns when mac was last learned, if the table has it.
func (t *MACTable) Seen(mac [6]byte) (int64, bool) {
	e, ok := t.m[mac]
	return e.seen, ok
}

// Sweep removes every expired entry and returns how many it removed.
func (t *MACTable) Sweep(now int64) int {
	n := 0
	for k, e := range t.m {
		if now-e.seen >= t.age {
			delete(t.m, k)
			n++
		}
	}
	t.st.Expired += uint64(n)
	return n
}

// Len returns the number of entries (live or not yet swept).
func (t *MACTable) Len() int { return len(t.m) }

// Stats returns the counters.
func (t *MACTable) Stats() LearnStats {
	s := t.st
	s.Entries = uint64(len(t.m))
	return s
}
