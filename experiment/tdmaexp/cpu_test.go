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
	// user nice system idle iowait irq softirq steal guest guest_nice
	s, err := parseCPU("cpu  100 2 30 400 5 6 7 8 50 1")
	if err != nil || s != (CPUSample{Busy: 153, Total: 558, Steal: 8}) {
		t.Errorf("parseCPU = %+v, %v; want busy 153, total 558, steal 8", s, err)
	}
	if got := StealPct(CPUSample{Total: 1000, Steal: 10}, CPUSample{Total: 1400, Steal: 30}); got != 5 {
		t.Errorf("StealPct = %v, want 5", got)
	}
	if _, err := parseCPU("intr 1 2 3"); err == nil {
		t.Error("parseCPU took a line that is not cpu's")
	}
	if _, err := ReadCPU(); err != nil {
		t.Fatal(err)
	}
}
