package cellify

// MACTable maps host MAC addresses to the (edge, host port) they are behind,
// learned like a switch learns: from the source MACs of frames that arrive in
// cells (and of local host ports, if the caller teaches them). Entries age
// out; the table is bounded. It does not allocate after NewMACTable.
//
// The entries live in a fixed array of slots, the map giving a MAC's slot.
// Learn and Lookup each remember the slot they last found: a run of
// frames from one host to another (the common case) finds its source and
// its destination there, checked by their MACs, without hashing.
type MACTable struct {
	max int
	age int64
	m   map[[6]byte]int32 // a MAC's slot in ent
	ent []macEntry
	// free are the unused slots; learnAt and lookAt the slots Learn and
	// Lookup last found (-1: none).
	free            []int32
	learnAt, lookAt int32
	st              LearnStats
}

type macEntry struct {
	seen int64
	mac  [6]byte
	edge EdgeID
	port uint8
	used bool
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
	t := &MACTable{max: size, age: age, m: make(map[[6]byte]int32, size), ent: make([]macEntry, size),
		free: make([]int32, size), learnAt: -1, lookAt: -1}
	for i := range t.free {
		t.free[i] = int32(size - 1 - i) // slot 0 taken first
	}
	return t
}

// slot returns mac's slot, trying at first (a remembered slot, -1: none)
// before the map.
func (t *MACTable) slot(mac *[6]byte, at int32) (int32, bool) {
	if at >= 0 {
		if e := &t.ent[at]; e.used && e.mac == *mac {
			return at, true
		}
	}
	i, ok := t.m[*mac]
	return i, ok
}

// remove forgets the entry in slot i.
func (t *MACTable) remove(i int32) {
	e := &t.ent[i]
	delete(t.m, e.mac)
	*e = macEntry{}
	t.free = append(t.free, i)
}

// isGroup reports a multicast or broadcast address.
func isGroup(mac *[6]byte) bool { return mac[0]&1 != 0 }

// Learn records that mac is behind (edge, port) at time now.
func (t *MACTable) Learn(now int64, mac [6]byte, edge EdgeID, port uint8) {
	if isGroup(&mac) {
		t.st.BadSrc++
		return
	}
	if i, ok := t.slot(&mac, t.learnAt); ok {
		e := &t.ent[i]
		if e.edge != edge || e.port != port {
			t.st.Moved++
		}
		e.seen, e.edge, e.port = now, edge, port
		t.learnAt = i
		return
	}
	if len(t.m) >= t.max && !t.evictOne(now) {
		t.st.Refused++
		return
	}
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	t.ent[i] = macEntry{seen: now, mac: mac, edge: edge, port: port, used: true}
	t.m[mac] = i
	t.learnAt = i
	t.st.Learned++
}

// evictOne removes one expired entry among a few; false if none was found.
func (t *MACTable) evictOne(now int64) bool {
	n := 0
	for _, i := range t.m {
		if now-t.ent[i].seen >= t.age {
			t.remove(i)
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
		if i, ok := t.slot(&mac, t.lookAt); ok {
			e := &t.ent[i]
			if now-e.seen < t.age {
				t.st.Hits++
				t.lookAt = i
				return Dest{Edge: e.edge, Port: e.port}
			}
			t.remove(i)
			t.st.Expired++
		}
	}
	t.st.Floods++
	return Dest{Flood: true}
}

// Seen returns when mac was last learned, if the table has it.
func (t *MACTable) Seen(mac [6]byte) (int64, bool) {
	if i, ok := t.slot(&mac, t.lookAt); ok {
		return t.ent[i].seen, true
	}
	return 0, false
}

// Sweep removes every expired entry and returns how many it removed.
func (t *MACTable) Sweep(now int64) int {
	n := 0
	for _, i := range t.m {
		if now-t.ent[i].seen >= t.age {
			t.remove(i)
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
