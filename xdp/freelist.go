package xdp

// FreeList is a fixed-capacity LIFO stack of UMEM frame addresses. It never
// allocates after construction and never panics: popping from an empty list and
// pushing onto a full one fail and are counted.
//
// LIFO order reuses the most recently freed (cache-warm) frames first.
//
// A FreeList is not safe for concurrent use; give each worker its own or guard it.
type FreeList struct {
	addrs     []uint64
	n         int
	exhausted uint64 // pops that found the list empty (per frame asked for)
	overflows uint64 // pushes that found the list full (per frame)
}

// NewFreeList returns an empty list that can hold capacity addresses.
func NewFreeList(capacity int) *FreeList {
	if capacity < 0 {
		capacity = 0
	}
	return &FreeList{addrs: make([]uint64, capacity)}
}

// Push puts addr on the list. It returns false (and counts an overflow) if the
// list is full, which means a frame was freed twice or capacity is too small.
func (f *FreeList) Push(addr uint64) bool {
	if f.n == len(f.addrs) {
		f.overflows++
		return false
	}
	f.addrs[f.n] = addr
	f.n++
	return true
}

// Pop takes the most recently pushed address. ok is false (and an exhaustion is
// counted) if the list is empty.
func (f *FreeList) Pop() (addr uint64, ok bool) {
	if f.n == 0 {
		f.exhausted++
		return 0, false
	}
	f.n--
	return f.addrs[f.n], true
}

// PopN fills dst with up to len(dst) addresses and returns how many. Frames asked
// for but not available are counted as exhaustion.
func (f *FreeList) PopN(dst []uint64) int {
	k := len(dst)
	if k > f.n {
		f.exhausted += uint64(k - f.n)
		k = f.n
	}
	copy(dst[:k], f.addrs[f.n-k:f.n])
	f.n -= k
	return k
}

// PushN pushes the addresses in src and returns how many fitted; the rest are
// counted as overflows.
func (f *FreeList) PushN(src []uint64) int {
	k := len(src)
	if room := len(f.addrs) - f.n; k > room {
		f.overflows += uint64(k - room)
		k = room
	}
	copy(f.addrs[f.n:f.n+k], src[:k])
	f.n += k
	return k
}

// Len is the number of free addresses held.
func (f *FreeList) Len() int { return f.n }

// Cap is the fixed capacity.
func (f *FreeList) Cap() int { return len(f.addrs) }

// Exhausted counts frames requested while the list was empty.
func (f *FreeList) Exhausted() uint64 { return f.exhausted }

// Overflows counts frames pushed while the list was full.
func (f *FreeList) Overflows() uint64 { return f.overflows }
