package tdmaexp

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/tdma/host"
)

// progressAt builds a host's progress: rate bytes/s while open, nothing
// in the guard, slot after slot, sampled every 10 ms, up to total bytes.
func progressAt(rate float64, slot, guard time.Duration, total int64) HostProgress {
	p := HostProgress{Host: 1}
	for t := 0.0; ; t += 0.01 {
		L, g := slot.Seconds(), guard.Seconds()
		full := math.Floor(t / L)
		in := t - full*L
		b := int64(rate * (full*(L-g) + max(0, in-g)))
		p.T, p.Bytes = append(p.T, t), append(p.Bytes, min(b, total))
		if b >= total {
			return p
		}
	}
}

func TestSteadyRateAndEfficiency(t *testing.T) {
	const R = 100e6
	line := R / 8 * rawPayload / wireFrame // payload bytes/s at full line use
	for _, c := range []struct{ slot, guard time.Duration }{{5 * time.Millisecond, 300 * time.Microsecond}, {time.Millisecond, 250 * time.Microsecond}, {10 * time.Millisecond, 0}} {
		p := progressAt(line, c.slot, c.guard, 6<<20)
		eff, gp, ok := slotEfficiency([]HostProgress{p, p}, R)
		want := float64(c.slot-c.guard) / float64(c.slot)
		if !ok || math.Abs(eff-want) > 0.01 {
			t.Errorf("slot %v guard %v: efficiency %.4f ok %v, want %.4f", c.slot, c.guard, eff, ok, want)
		}
		if math.Abs(gp-eff*rawPayload/wireFrame) > 1e-9 {
			t.Errorf("goodput ÷ R %.4f: want efficiency × payload/wire frame", gp)
		}
	}
	if _, _, ok := slotEfficiency([]HostProgress{{T: []float64{0, 1}, Bytes: []int64{0, 0}}}, R); ok {
		t.Error("a host that received nothing gave an efficiency")
	}
	// between samples the bytes are taken to arrive at a steady rate
	if r, ok := steadyRate(HostProgress{T: []float64{0, 1, 2, 3}, Bytes: []int64{0, 0, 100, 100}}, 0.1, 0.9); !ok || math.Abs(r-100) > 1e-9 {
		t.Errorf("100 bytes in a second: rate %v ok %v", r, ok)
	}
	if _, ok := steadyRate(HostProgress{T: []float64{0}, Bytes: []int64{100}}, 0.1, 0.9); ok {
		t.Error("one sample gave a rate")
	}
}

func TestGuardFrom(t *testing.T) {
	hs := []host.Stats{
		{DelayEst: 20_000, CtlDelayP001us: 15, CtlDelayP50us: 40, CtlDelayP999us: 120},
		{DelayEst: 10_000, CtlDelayP001us: 12, CtlDelayP50us: 30, CtlDelayP999us: 200},
		{}, // no grant measured: left out
	}
	g, ok := GuardFrom(hs, 100e6)
	if !ok {
		t.Fatal("not ok")
	}
	// late: max(120−20, 200−10) = 190; early: max(20−15, 10−12 → 0) = 5; frame 1538 B at 100 Mb/s = 123.04 µs
	if g.LateUs != 190 || g.EarlyUs != 5 || math.Abs(g.FrameUs-123.04) > 0.01 || g.Guard != 320*time.Microsecond || len(g.Hosts) != 2 {
		t.Errorf("guard %+v", g)
	}
	if _, ok := GuardFrom([]host.Stats{{}}, 100e6); ok {
		t.Error("ok without any measurement")
	}
}

func TestSummarizeSlots(t *testing.T) {
	ms := time.Millisecond
	run := func(L time.Duration, eff float64, drops uint64) SlotRun {
		r := SlotRun{Slot: L, Guard: 300 * time.Microsecond, Efficiency: eff, Expected: float64(L-300*time.Microsecond) / float64(L)}
		r.Switch.Drops = drops
		return r
	}
	runs := []SlotRun{
		run(ms, 0.95, 0), run(ms, 0.95, 3), run(ms, 0.95, 0), // efficient, but a run dropped
		run(2*ms, 0.80, 0), run(2*ms, 0.95, 0), run(2*ms, 0.91, 0), // median 0.91
		run(5*ms, 0.96, 0), run(5*ms, 0.97, 0), run(5*ms, 0.95, 0),
		{Slot: ms / 4, Skipped: "nothing left"},
	}
	s := summarizeSlots([]time.Duration{5 * ms, ms / 4, ms, 2 * ms}, runs, 0.9)
	if s.Smallest != 2*ms {
		t.Fatalf("smallest %v, want 2ms: %+v", s.Smallest, s)
	}
	if s.Slots[0].Slot != ms/4 || s.Slots[0].Runs != 0 || s.Slots[0].Skipped == "" || s.Slots[0].Meets {
		t.Errorf("skipped slot %+v", s.Slots[0])
	}
	if m := s.Slots[1]; m.Slot != ms || m.Meets || m.DropsMax != 3 || m.Drops != 0 {
		t.Errorf("1 ms: %+v", m)
	}
	if m := s.Slots[2]; math.Abs(m.Efficiency-0.91) > 1e-9 || !m.Meets || math.Abs(m.LostPerSlotUs-(0.85-0.91)*2000) > 1e-6 {
		t.Errorf("2 ms: %+v", m)
	}
	if !strings.Contains(s.Answer, "2ms") {
		t.Errorf("answer %q", s.Answer)
	}
	s = summarizeSlots([]time.Duration{ms, 2 * ms, 5 * ms}, runs, 0.99)
	if s.Smallest != 0 || !strings.Contains(s.Answer, "no slot") || !strings.Contains(s.Answer, "5ms") {
		t.Errorf("target 0.99: %+v", s)
	}
}

func TestWriteTDMASlots(t *testing.T) {
	ms := time.Millisecond
	r := &TDMASlotsResult{Config: TDMASlotsConfig{Slots: []time.Duration{ms, 5 * ms}, Target: 0.9, Star: TDMAStar{Hosts: 4, Rate: 100e6}}}
	for _, L := range r.Config.Slots {
		a := SlotRun{Slot: L, Guard: 300 * time.Microsecond, Efficiency: float64(L-300*time.Microsecond) / float64(L), Expected: float64(L-300*time.Microsecond) / float64(L)}
		a.Run = 1
		r.Runs = append(r.Runs, a)
	}
	r.summarize()
	dir := t.TempDir()
	b := written(t, 3, filepath.Join(dir, "slots.csv"))(WriteTDMASlots(dir, r))
	if strings.Count(string(b), "\n") != 3 || !strings.Contains(string(b), "5.000,300,1,0.9400") {
		t.Errorf("slots.csv:\n%s", b)
	}
	if st, err := os.Stat(filepath.Join(dir, "slots-efficiency.png")); err != nil || st.Size() < 1000 {
		t.Errorf("png %v %v", st, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "slots.json"))
	if !strings.Contains(string(b), `"smallest_slot_ns": 5000000`) {
		t.Errorf("slots.json has no summary answer:\n%s", b)
	}
}
