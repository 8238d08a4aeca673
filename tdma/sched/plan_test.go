package sched

import "testing"

// TestPlannerTail: a shuffle's tail (two rounds' worth left) with one
// pair three slots behind the others is planned backward from its end:
// every slot a matching within the demand, the pair behind served first,
// and every pair's last slot in the plan's last N−1 slots; the round is
// the plan's first MaxSlots.
func TestPlannerTail(t *testing.T) {
	const N, slotCap = 4, 50_000
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 8, SlotLen: 5e6, Guard: 3e5}
	d := NewDemand(N)
	for i := range d.Bytes {
		for j := range d.Bytes[i] {
			if i != j {
				d.Bytes[i][j] = 4 * slotCap
			}
		}
	}
	d.Bytes[1][0] = 7 * slotCap
	n := SlotDemand(d, slotCap)
	r := p.Next(1, 1, d, make([]int64, N))
	if err := Validate(r, n); err != nil {
		t.Fatal(err)
	}
	if len(r.Slots) != p.MaxSlots || r.Slots[0][1] != 0 {
		t.Fatalf("%d slots, first %v: want %d, h1 → h0 first", len(r.Slots), r.Slots[0], p.MaxSlots)
	}
	all := &Round{Slots: tail{p: &p, rot: &Rotor{}, bytes: d.Bytes}.Build(n, 1000), Class: r.Class}
	if err := Validate(all, n); err != nil || len(all.Slots) != maxLine(n) {
		t.Fatalf("whole tail: %v, %d slots for %d", err, len(all.Slots), maxLine(n))
	}
	r = all
	last := make([][]int, N)
	for i := range last {
		last[i] = make([]int, N)
	}
	for k, m := range r.Slots {
		for i, j := range m {
			if j >= 0 {
				last[i][j] = k
			}
		}
	}
	for i := range last {
		for j, k := range last[i] {
			if i != j && k < len(r.Slots)-(N-1) {
				t.Errorf("h%d → h%d ends in slot %d of %d", i, j, k, len(r.Slots))
			}
		}
	}
}
