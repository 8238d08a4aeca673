package linkguardian_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// lg → lgnb while holes are open and frames wait in the reorder buffer: the
// buffered frames are delivered at once, the holes are still recovered, and
// nothing is lost or duplicated.
func TestSetDeliveryLGToLGNBMidHole(t *testing.T) {
	cfg := oneWay(linkguardian.InOrder, 1)
	// Lose frame 10's original and its first copy: it stays missing for a
	// re-notification interval while later frames pile up in the buffer.
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropID(10, 2)}
	s := newSim(t, cfg)
	s.Send(lgsim.A, 200, 100) // one frame every 100 ns
	r := s.Port(lgsim.B).R
	for s.Now() < 1_000_000 {
		s.Run(500)
		if f, _ := r.Buffered(); f >= 20 {
			break
		}
	}
	held, _ := r.Buffered()
	if held < 20 || r.Missing() != 1 {
		t.Fatalf("setup: %d frames buffered, %d missing; want ≥ 20 and 1", held, r.Missing())
	}
	before := len(s.Delivered(lgsim.B))
	if !r.SetDelivery(s.Now(), linkguardian.NonBlocking) || r.Delivery() != linkguardian.NonBlocking {
		t.Fatal("switch to lgnb refused")
	}
	if f, b := r.Buffered(); f != 0 || b != 0 {
		t.Fatalf("buffer not released: %d frames %d bytes", f, b)
	}
	if got := len(s.Delivered(lgsim.B)); got != before { // delivered on the next delivery step
		s.Run(1)
	}
	finish(t, s)
	got := s.Delivered(lgsim.B)
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, seqIDs(0, 200)) {
		t.Fatalf("after lg→lgnb: lost or duplicated frames: %v", head(sorted))
	}
	if i := slices.Index(got, 10); i <= 10 {
		t.Fatalf("frame 10 delivered at %d: the buffered frames should have gone first", i)
	}
	if rs := r.Stats; rs.Recovered != 1 || rs.AckNoTimeouts != 0 || rs.ModeChanges != 1 {
		t.Fatalf("stats %+v", rs)
	}
}

// lgnb → lg waits for holes to close; monitor mode loses frames without
// asking for them, and switching protection back on protects again.
func TestSetDeliveryMonitorAndBack(t *testing.T) {
	cfg := oneWay(linkguardian.NonBlocking, 1)
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropID(5, 1), lgsim.DropID(150, 1), lgsim.DropID(250, 1)}
	s := newSim(t, cfg)
	r := s.Port(lgsim.B).R
	s.Send(lgsim.A, 100, 100)
	s.Run(5_000) // frame 5 lost and not yet recovered... or recovered: either way
	for !r.SetDelivery(s.Now(), linkguardian.Monitor) {
		if r.Missing() == 0 {
			t.Fatal("SetDelivery(monitor) refused with nothing missing")
		}
		s.Run(1_000)
	}
	finish(t, s)
	wantSorted(t, s.Delivered(lgsim.B), seqIDs(0, 100))

	// Unprotected: frame 150 is lost for good, with no loss notification.
	notifs := r.Stats.LossNotifsSent
	s.Send(lgsim.A, 100, 100)
	finish(t, s)
	wantSorted(t, s.Delivered(lgsim.B), seqIDs(0, 200, 150))
	if r.Stats.LostUnprotected != 1 || r.Stats.LossNotifsSent != notifs {
		t.Fatalf("monitor: %+v", r.Stats)
	}

	// Protection on again (in order): frame 250 is recovered.
	if !r.SetDelivery(s.Now(), linkguardian.InOrder) {
		t.Fatal("SetDelivery(lg) refused on a quiet link")
	}
	s.Send(lgsim.A, 100, 100)
	finish(t, s)
	got := s.Delivered(lgsim.B)
	if !slices.Equal(got[len(got)-100:], seqIDs(200, 100)) {
		t.Fatalf("lg after monitor: %v", head(got[len(got)-100:]))
	}
	if r.Stats.Recovered < 2 || r.Stats.ModeChanges != 2 {
		t.Fatalf("stats %+v", r.Stats)
	}
}

func wantSorted(t *testing.T, got, want []uint64) {
	t.Helper()
	s := slices.Clone(got)
	slices.Sort(s)
	if !slices.Equal(s, want) {
		t.Fatalf("delivered %d frames, want %d: %v", len(s), len(want), head(s))
	}
}

// Raising the thresholds while paused resumes the sender at the next poll,
// before the hole that filled the buffer is repaired; with the raised
// thresholds the same hole pauses no more.
func TestSetThresholdsResumes(t *testing.T) {
	cfg := backpressureLink(100*us, 500*us)
	// The original and its copy are lost: the hole stays open until the
	// re-notification, 100 µs.
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropID(10, 2)}
	s := newSim(t, cfg)
	r := s.Port(lgsim.B).R
	s.Send(lgsim.A, 2000, 0)
	s.Run(60 * us)
	if r.Stats.PausesSent == 0 || r.Stats.ResumesSent != 0 {
		t.Fatalf("setup: want paused behind the hole; pauses %d resumes %d, reorder %d B", r.Stats.PausesSent, r.Stats.ResumesSent, r.Stats.ReorderBytes)
	}
	r.SetThresholds(1<<20, linkguardian.PauseThreshold(1<<20, 1514))
	if res, pause := r.Thresholds(); res != 1<<20 || pause != 1<<20+2*1514 {
		t.Fatalf("thresholds %d/%d after SetThresholds", res, pause)
	}
	r.SetThresholds(5, 5) // invalid: ignored
	if res, _ := r.Thresholds(); res != 1<<20 {
		t.Fatalf("invalid thresholds taken: resume %d", res)
	}
	s.Run(5 * us)
	if r.Stats.ResumesSent != 1 || r.Stats.Recovered != 0 {
		t.Fatalf("after raising the thresholds: resumes %d (want 1), recovered %d (want 0: the hole is still open)", r.Stats.ResumesSent, r.Stats.Recovered)
	}
	pauses := r.Stats.PausesSent
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 2000))
	if r.Stats.PausesSent != pauses {
		t.Fatalf("paused again (%d → %d) below the raised threshold", pauses, r.Stats.PausesSent)
	}
}

// The deliveries' names are the dataplane's mode names, in JSON too.
func TestDeliveryNames(t *testing.T) {
	for d, name := range map[linkguardian.Delivery]string{linkguardian.InOrder: "lg", linkguardian.NonBlocking: "lgnb", linkguardian.Monitor: "monitor"} {
		if d.String() != name {
			t.Errorf("%d.String() = %q, want %q", d, d.String(), name)
		}
		if got, err := linkguardian.ParseDelivery(name); got != d || err != nil {
			t.Errorf("ParseDelivery(%q) = %v, %v", name, got, err)
		}
		b, err := json.Marshal(struct{ D linkguardian.Delivery }{d})
		if want := `{"D":"` + name + `"}`; err != nil || string(b) != want {
			t.Errorf("json of %s: %s, %v; want %s", name, b, err, want)
		}
		var back struct{ D linkguardian.Delivery }
		if err := json.Unmarshal(b, &back); err != nil || back.D != d {
			t.Errorf("json %s decodes to %v, %v", b, back.D, err)
		}
	}
	if _, err := linkguardian.ParseDelivery("off"); err == nil {
		t.Error(`ParseDelivery("off") succeeded`)
	}
	if _, err := json.Marshal(linkguardian.Delivery(3)); err == nil {
		t.Error("delivery 3 marshalled")
	}
}
