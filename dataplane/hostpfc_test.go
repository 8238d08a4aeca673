package dataplane

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/pfc"
)

// pfcConfig is a forward --pfc configuration with the host port at
// hostRate (0: none, so --link-speed applies) after its defaults.
func pfcConfig(t *testing.T, p PFCConfig, linkSpeed, hostRate uint64) (Config, error) {
	t.Helper()
	c := Config{HostPort: "host0", LinkPort: "link0", PFC: p}
	c.Link.Speed = linkSpeed
	if hostRate != 0 {
		c.Shape = map[string]PortShape{"host0": {Rate: hostRate}}
	}
	err := c.defaults()
	return c, err
}

// The pause's quanta follow the host port's speed: its --port-rate, else
// --link-speed, else 10G; the default is the longest a frame carries; the
// thresholds default from the queue limit; bad values are refused.
func TestPFCConfigQuanta(t *testing.T) {
	for _, tc := range []struct {
		name                string
		pause               time.Duration
		linkSpeed, hostRate uint64
		quanta              uint16
		pauseNs             int64
	}{
		// 1 ms at 10 Gbit/s is 19531.25 quanta of 51.2 ns: rounded up.
		{"1ms at the default 10G", time.Millisecond, 0, 0, 19532, 1_000_039},
		{"1ms at --link-speed 25G", time.Millisecond, pfc.Speed25G, 0, 48829, 1_000_018},
		{"1ms at host0's --port-rate 1G over --link-speed 100G", time.Millisecond, pfc.Speed100G, pfc.Speed1G, 1954, 1_000_448},
		{"default at 10G", 0, 0, 0, 65535, 3_355_392},
		{"default at 100G", 0, pfc.Speed100G, 0, 65535, 335_540},
	} {
		c, err := pfcConfig(t, PFCConfig{Enabled: true, Pause: tc.pause}, tc.linkSpeed, tc.hostRate)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := (&PFCCounters{}).snapshot(&c.PFC)
		if s.Quanta != tc.quanta || s.PauseNs != tc.pauseNs {
			t.Errorf("%s: %d quanta (%d ns), want %d (%d ns)", tc.name, s.Quanta, s.PauseNs, tc.quanta, tc.pauseNs)
		}
		if s.XOFF != HostQueueLen/2 || s.XON != HostQueueLen/4 {
			t.Errorf("%s: XOFF %d XON %d, want %d and %d", tc.name, s.XOFF, s.XON, HostQueueLen/2, HostQueueLen/4)
		}
	}
	for _, tc := range []struct {
		p    PFCConfig
		want string
	}{
		{PFCConfig{XOFF: 8}, "need --pfc"},
		{PFCConfig{Enabled: true, XOFF: HostQueueLen + 1}, "--pfc-xoff"},
		{PFCConfig{Enabled: true, XOFF: 8, XON: 8}, "below --pfc-xoff 8"},
		{PFCConfig{Enabled: true, Pause: 4 * time.Millisecond}, "at most 65535 quanta"}, // 3.36 ms at 10G
		{PFCConfig{Enabled: true, Pause: time.Microsecond}, "at least"},
	} {
		if _, err := pfcConfig(t, tc.p, 0, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.p, err, tc.want)
		}
	}
	c := Config{HostPort: "host0", LinkPort: "link0", Mode: modeCells, PFC: PFCConfig{Enabled: true}}
	if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "cells") {
		t.Errorf("--pfc in mode cells: %v, want a refusal", err)
	}
}

// testHostPFC is the state machine of XOFF 8, XON 2 and a 1 ms pause at
// 10 Gbit/s, with its counters.
func testHostPFC(t *testing.T) (*hostPFC, *PFCCounters, int64) {
	t.Helper()
	c, err := pfcConfig(t, PFCConfig{Enabled: true, XOFF: 8, XON: 2, Pause: time.Millisecond}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := &PFCCounters{}
	h := newHostPFC(&c.PFC, [6]byte{2, 0, 0, 0, 0, 1}, st)
	return h, st, pfc.QuantaToNanos(c.PFC.quanta, c.PFC.hostSpeed)
}

// On a virtual clock: one pause when a class reaches XOFF, nothing more
// while the pause lasts, a refresh once half of it has run out while the
// class is above XON (even below XOFF), a resume (quanta 0) once at XON,
// and the frame on the wire says so.
func TestHostPFCThresholds(t *testing.T) {
	h, st, hold := testHostPFC(t)
	var occ [pfc.NumClasses]int
	type want struct {
		send   bool
		enable uint8
		quanta uint16 // of class 3
	}
	step := func(what string, now int64, w want) {
		t.Helper()
		got := h.decide(now, &occ)
		if got != w.send || (got && (h.frame.ClassEnable != w.enable || h.frame.Quanta[3] != w.quanta)) {
			t.Fatalf("%s (t=%d, occupancy %v): send %v enable %08b quanta[3] %d, want %v %08b %d",
				what, now, occ, got, h.frame.ClassEnable, h.frame.Quanta[3], w.send, w.enable, w.quanta)
		}
		if got {
			h.sent(now)
		}
	}
	occ[3] = 7
	step("class 3 below XOFF", 0, want{})
	occ[3], occ[5] = 8, 100
	step("classes 3 at XOFF and 5 over it: one frame", 1000, want{true, 1<<3 | 1<<5, 19532})
	pausedAt := int64(1000)
	occ[3] = 500
	step("class 3 far over XOFF, pause in force", 2000, want{})
	if n := h.next(); n != pausedAt+hold/2 {
		t.Fatalf("next %d, want the refresh at %d (half of %d ns after the pause)", n, pausedAt+hold/2, hold)
	}
	step("just before the refresh", pausedAt+hold/2-1, want{})
	occ[3] = 3 // below XOFF, above XON: still paused
	step("refresh due, class 3 above XON", pausedAt+hold/2, want{true, 1<<3 | 1<<5, 19532})
	occ[3] = 2
	step("class 3 at XON", pausedAt+hold/2+10, want{true, 1 << 3, 0})
	step("class 3 resumed, at XON", pausedAt+hold/2+20, want{})
	occ[3] = 0
	step("class 3 empty, class 5 due", pausedAt+2*hold, want{true, 1 << 5, 0})
	for c, w := range map[int][3]uint64{3: {3, 1, 1}, 5: {3, 1, 0}} {
		if got := [3]uint64{st.Tx[c].Load(), st.Xoff[c].Load(), st.Xon[c].Load()}; got != w {
			t.Errorf("class %d: tx, xoff, xon %v, want %v", c, got, w)
		}
	}
	if p := st.HostPaused.Load(); p != 1<<5 {
		t.Errorf("host paused %08b, want class 5 only", p)
	}
	// On the wire: a PFC frame from the host port's MAC to the MAC
	// Control address, as a host NIC decodes it.
	b := make([]byte, pfc.FrameLen)
	if _, err := h.frame.Encode(b); err != nil {
		t.Fatal(err)
	}
	var f pfc.Frame
	if err := pfc.Decode(b, &f); err != nil || f.Opcode != pfc.OpPFC || f.Dst != pfc.MulticastAddr ||
		f.Src != [6]byte{2, 0, 0, 0, 0, 1} || f.ClassEnable != 1<<5 || f.Quanta[5] != 19532 {
		t.Errorf("frame on the wire: %+v (%v)", f, err)
	}
}

// A random walk of every class's occupancy, decided every 10-100 µs: a
// host that applies each frame sent (pfc.State, the host NIC's view) is
// paused for a class exactly while the machine says so (the pause never
// runs out, a resume ends it at once); a class is paused only from XOFF
// and resumed only at XON or below; a frame never both pauses and
// resumes a class, and pauses and resumes alternate.
func TestHostPFCNeverLapses(t *testing.T) {
	h, st, _ := testHostPFC(t)
	var host pfc.State
	var occ [pfc.NumClasses]int
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, pfc.FrameLen)
	var now int64
	var sent, pauses, resumes int
	for range 200_000 {
		now += 10_000 + rng.Int64N(90_000)
		for c := range occ {
			occ[c] = max(0, min(12, occ[c]+rng.IntN(5)-2))
		}
		was := h.paused
		// The pause the host has is still in force when the dataplane
		// looks again (it runs out only after the refresh is due).
		if m := host.PausedMask(now); m != was {
			t.Fatalf("t=%d: before deciding, the host pauses %08b, the dataplane told it %08b", now, m, was)
		}
		if h.decide(now, &occ) {
			f := &h.frame
			for c := range pfc.NumClasses {
				bit := uint8(1) << c
				if f.ClassEnable&bit == 0 {
					continue
				}
				switch {
				case f.Quanta[c] == 0 && (was&bit == 0 || occ[c] > 2):
					t.Fatalf("t=%d class %d: resume at occupancy %d, paused %v", now, c, occ[c], was&bit != 0)
				case f.Quanta[c] != 0 && was&bit == 0 && occ[c] < 8:
					t.Fatalf("t=%d class %d: pause at occupancy %d, below XOFF", now, c, occ[c])
				case f.Quanta[c] != 0 && occ[c] <= 2:
					t.Fatalf("t=%d class %d: pause refreshed at occupancy %d, at XON", now, c, occ[c])
				}
			}
			h.sent(now)
			sent++
			if _, err := f.Encode(b); err != nil {
				t.Fatal(err)
			}
			var got pfc.Frame
			if err := pfc.Decode(b, &got); err != nil {
				t.Fatal(err)
			}
			if err := host.Apply(&got, now, pfc.Speed10G); err != nil {
				t.Fatal(err)
			}
		}
		if m := host.PausedMask(now); m != h.paused {
			t.Fatalf("t=%d: the host pauses %08b, the dataplane told it %08b (occupancy %v)", now, m, h.paused, occ)
		}
	}
	if a := testing.AllocsPerRun(100, func() {
		now += 1000
		if h.decide(now, &occ) {
			h.sent(now)
		}
	}); a != 0 {
		t.Errorf("decide and sent allocate: %v per call", a)
	}
	for c := range pfc.NumClasses {
		x, o := st.Xoff[c].Load(), st.Xon[c].Load()
		if x != o && x != o+1 || (x == o+1) != (h.paused&(1<<c) != 0) {
			t.Errorf("class %d: %d pauses, %d resumes, paused %v", c, x, o, h.paused&(1<<c) != 0)
		}
		pauses += int(x)
		resumes += int(o)
	}
	if pauses < 100 || resumes < 100 {
		t.Fatalf("the walk crossed the thresholds %d and %d times: too few to test anything", pauses, resumes)
	}
	t.Logf("%d frames: %d pauses begun, %d resumes", sent, pauses, resumes)
}
