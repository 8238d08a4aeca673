package tdmaexp

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
)

// TestOscMeasure: a port read at every fifth of a phase, at 100 Mbit/s
// and a tenth of it every 50 ms, that sent its rate in high phases but
// half of it in their first fifth, and its rate in low phases: the
// phases whole in the window count, and nothing else.
func TestOscMeasure(t *testing.T) {
	const (
		period = 50_000_000
		rate   = 100e6
		low    = 0.1
	)
	tr := oscTrace{Start: 0, Period: period}
	var sent uint64
	var drops uint32
	for i := 0; i <= 8*oscFifths; i++ {
		tr.T = append(tr.T, int64(i)*period/oscFifths)
		tr.Sent, tr.Drops = append(tr.Sent, sent), append(tr.Drops, drops)
		fifth := float64(period/oscFifths) / 1e9
		switch ph := (i / oscFifths) % 2; {
		case ph == 0 && i%oscFifths == 0:
			sent += uint64(rate / 8 * fifth / 2)
		case ph == 0:
			sent += uint64(rate / 8 * fifth)
		default:
			sent += uint64(low * rate / 8 * fifth)
			drops++
		}
	}
	tr.Late = []int64{1000, 3000, 2000}
	var r OscRun
	// phases 1..6 whole in [from, to]: 3 low, 3 high
	tr.measure(&r, rate, low, period, 7*period)
	if r.Phases != 6 {
		t.Fatalf("%d phases measured, want 6", r.Phases)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-3 }
	if !near(r.HighUse, 0.9) || !near(r.LowUse, 1) || !near(r.HighFifths[0], 0.5) || !near(r.HighFifths[1], 1) || !near(r.LowFifths[4], 1) {
		t.Errorf("use high %.3f low %.3f, by fifth %v %v; want 0.9, 1, the first high fifth 0.5", r.HighUse, r.LowUse, r.HighFifths, r.LowFifths)
	}
	if r.PortDrops != 3*oscFifths {
		t.Errorf("%d drops in the measured phases, want %d", r.PortDrops, 3*oscFifths)
	}
	if r.ChangeLateP50us != 2 || r.ChangeLateMaxus != 3 {
		t.Errorf("change lateness p50 %v max %v µs, want 2 and 3", r.ChangeLateP50us, r.ChangeLateMaxus)
	}
}

func TestSummarizeOsc(t *testing.T) {
	runs := []OscRun{
		{Arm: "tcp", OverCapacity: 0.8, PortDrops: 40},
		{Arm: "tdma", OverCapacity: 0.9, TDMA: &TDMACounters{}},
		{Arm: "tcp", OverCapacity: 0.7, PortDrops: 10},
		{Arm: "tdma", OverCapacity: 0.85, PortDrops: 0, TDMA: &TDMACounters{Collisions: 0}},
	}
	arms, cs := summarizeOsc([]string{"tcp", "tdma"}, runs)
	if arms["tcp"].Runs != 2 || arms["tcp"].PortDrops != 40 || math.Abs(arms["tdma"].OverCapacity-0.875) > 1e-9 {
		t.Fatalf("summary %+v", arms)
	}
	for _, c := range cs {
		if !c.Met {
			t.Errorf("missed: %+v", c)
		}
	}
	runs[3].PortDrops, runs[1].OverCapacity = 1, 0.5
	_, cs = summarizeOsc([]string{"tcp", "tdma"}, runs)
	missed := 0
	for _, c := range cs {
		if !c.Met {
			missed++
		}
	}
	if len(cs) != 3 || missed != 2 {
		t.Errorf("with TDMA below TCP and a drop: %d checks, %d missed, want 3 and 2: %+v", len(cs), missed, cs)
	}
}

// TestOscFlags: a period under two slots, a low rate outside (0, 1) and
// free-run are refused before anything runs.
func TestOscFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--period", "9ms"}, "--period"},
		{[]string{"--low", "1"}, "--low"},
		{[]string{"--low", "0"}, "--low"},
		{[]string{"--mode", "freerun"}, "freerun"},
		{[]string{"--duration", "500ms"}, "--duration"},
		{[]string{"--arms", "udp"}, "udp"},
		{[]string{"--slot", "8ms"}, "buffer"},
	} {
		cmd := tdmaOscCmd()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one about %s", c.args, err, c.want)
		}
	}
}

// TestTDMAOscillateSmall runs both arms once for 2 s on a 2-host star:
// h2's port changes rate every phase, both flows carry data, the phases
// are measured, and the FM held windows into h2 back in the low phases
// (its capacity reached it). Figures are the experiment's, not checked
// here.
func TestTDMAOscillateSmall(t *testing.T) {
	netns.RequireRoot(t)
	if testing.Short() {
		t.Skip("a star and iperf3 for 2 s per arm")
	}
	self := bedtest.Self(t)
	e := &bed.Env{Self: self, Prefix: netns.TestPrefix(t, "lfso"), Progress: bedtest.Writer{T: t}}
	cfg := TDMAOscConfig{Star: TDMAStar{Hosts: 2, Rate: 100e6, Burst: 16 << 10, PortBurst: 32 << 10, Limit: 64 << 10, Slot: 5 * time.Millisecond,
		Guard: 300 * time.Microsecond, Mode: "lease", RT: 60, Sched: "rotor", Margin: 50 * time.Microsecond, SoftirqRT: DefaultSoftirqRT},
		Period: 50 * time.Millisecond, Low: 0.1, Duration: 2 * time.Second, Arms: OscArms, Runs: 1, Force: true, Dir: t.TempDir()}
	r, err := TDMAOsc(t.Context(), e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want one per arm", len(r.Runs))
	}
	for _, x := range r.Runs {
		t.Logf("%s: %.1f Mbit/s, %d phases, use high %.2f low %.2f, drops %d, withheld %d, changes late max %.0f µs",
			x.Arm, x.Bps/1e6, x.Phases, x.HighUse, x.LowUse, x.PortDrops, x.Withheld, x.ChangeLateMaxus)
		if x.Bps == 0 || x.Phases < 4 || x.ChangeLateMaxus == 0 {
			t.Errorf("%s: %.0f bit/s, %d phases measured, changes late at most %.0f µs: the flow or the oscillation did not run", x.Arm, x.Bps, x.Phases, x.ChangeLateMaxus)
		}
		if x.Arm == "tdma" && (x.Withheld == 0 || x.TDMA == nil) {
			t.Errorf("tdma: the FM withheld %d windows into h2: its capacity did not reach it", x.Withheld)
		}
	}
}
