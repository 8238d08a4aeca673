package tdmaexp

import "testing"

func TestBusyPct(t *testing.T) {
	a := CPUSample{Busy: 100, Total: 1000}
	b := CPUSample{Busy: 400, Total: 1400}
	if got := BusyPct(a, b); got != 75 {
		t.Errorf("BusyPct = %v, want 75", got)
	}
	if got := BusyPct(b, a); got != 0 {
		t.Errorf("BusyPct backwards = %v, want 0", got)
	}
	if _, err := ReadCPU(); err != nil {
		t.Fatal(err)
	}
}
