package cellify

import (
	"testing"
)

func mac(b byte) [6]byte { return [6]byte{0x02, 0, 0, 0, 0, b} }

func TestMACTable(t *testing.T) {
	const age = 1000
	tb := NewMACTable(3, age)
	tb.Learn(0, mac(1), 5, 1)
	tb.Learn(0, mac(2), 6, 2)
	if d := tb.Lookup(10, mac(1)); d != (Dest{Edge: 5, Port: 1}) {
		t.Fatalf("lookup of a learned MAC: %+v", d)
	}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	mcast := [6]byte{0x01, 0x00, 0x5e, 0, 0, 1}
	for _, m := range [][6]byte{bcast, mcast, mac(9)} {
		if d := tb.Lookup(10, m); !d.Flood {
			t.Fatalf("lookup of %x: %+v, want flood", m, d)
		}
	}
	tb.Learn(10, mcast, 7, 7) // a group source is not learned
	tb.Learn(20, mac(1), 7, 3)
	if d := tb.Lookup(30, mac(1)); d != (Dest{Edge: 7, Port: 3}) {
		t.Fatalf("after a move: %+v", d)
	}
	tb.Learn(30, mac(3), 1, 1)
	tb.Learn(30, mac(4), 1, 1) // full, nothing expired
	if d := tb.Lookup(40, mac(4)); !d.Flood {
		t.Fatal("learned beyond the bound")
	}
	// mac(2), learned at 0, has expired at 1000: it makes room.
	tb.Learn(age, mac(4), 1, 4)
	if d := tb.Lookup(age, mac(4)); d != (Dest{Edge: 1, Port: 4}) || !tb.Lookup(age, mac(2)).Flood {
		t.Fatal("an expired entry did not make room")
	}
	// Entries are forgotten age ns after they were last refreshed.
	if tb.Lookup(20+age-1, mac(1)).Flood || !tb.Lookup(20+age, mac(1)).Flood {
		t.Fatal("aging")
	}
	st := tb.Stats()
	want := LearnStats{Learned: 4, Moved: 1, Refused: 1, BadSrc: 1, Expired: 2, Hits: 4, Floods: 6, Entries: 2}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if n := tb.Sweep(1 << 40); n != 2 || tb.Len() != 0 {
		t.Fatalf("sweep removed %d, %d left", n, tb.Len())
	}
}

func TestMACTableNoAlloc(t *testing.T) {
	tb := NewMACTable(64, 1000)
	for i := range 64 {
		tb.Learn(0, mac(byte(i)), 1, 1)
	}
	now := int64(0)
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		now += 100
		i++
		tb.Learn(now, mac(byte(i%64)), 2, 1) // refresh
		tb.Lookup(now, mac(byte(i%64)))
		tb.Learn(now, [6]byte{0x02, 1, 0, 0, byte(i >> 8), byte(i)}, 3, 1) // new: evicts an expired one
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// TestMACTableRememberedSlot: the slot Learn and Lookup last found is
// taken only for its own MAC: after the entry expires and another MAC
// takes its slot, neither finds the old MAC there.
func TestMACTableRememberedSlot(t *testing.T) {
	const age = 1000
	tb := NewMACTable(1, age)
	tb.Learn(0, mac(1), 5, 1)
	if d := tb.Lookup(10, mac(1)); d != (Dest{Edge: 5, Port: 1}) {
		t.Fatalf("lookup of a learned MAC: %+v", d)
	}
	if !tb.Lookup(age, mac(1)).Flood { // expired: its slot is free
		t.Fatal("aging")
	}
	tb.Learn(age, mac(2), 6, 2) // takes the only slot
	if d := tb.Lookup(age+1, mac(1)); !d.Flood {
		t.Fatalf("lookup of a forgotten MAC in a reused slot: %+v", d)
	}
	if d := tb.Lookup(age+1, mac(2)); d != (Dest{Edge: 6, Port: 2}) {
		t.Fatalf("lookup of the slot's new MAC: %+v", d)
	}
	tb.Learn(age+2, mac(1), 7, 3) // full of a live entry: refused, not a refresh of mac(2)
	if d := tb.Lookup(age+3, mac(2)); d != (Dest{Edge: 6, Port: 2}) {
		t.Fatalf("after learning another MAC into a full table: %+v", d)
	}
	if s, ok := tb.Seen(mac(1)); ok {
		t.Fatalf("Seen of a forgotten MAC: %d", s)
	}
	st := tb.Stats()
	want := LearnStats{Learned: 2, Refused: 1, Expired: 1, Hits: 3, Floods: 2, Entries: 1}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}
