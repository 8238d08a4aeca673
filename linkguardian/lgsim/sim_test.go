package lgsim

import (
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/linkguardian"
)

func cfg() Config {
	sc := linkguardian.DefaultSenderConfig()
	rc := linkguardian.DefaultReceiverConfig()
	rc.RenotifyInterval, rc.AckNoTimeout = 20_000, 100_000
	return Config{
		A:  linkguardian.Config{Sender: &sc, Receiver: &rc},
		B:  linkguardian.Config{Sender: &sc, Receiver: &rc},
		AB: DirConfig{Delay: 2000, Rate: 10e9, Random: &linksim.Bernoulli{P: 0.02}, Seed: 9, CtrlJitter: 500},
		BA: DirConfig{Delay: 2000, Rate: 10e9, Random: &linksim.Bursty{P: 0.02, MeanBurst: 2, Slot: 100}, Seed: 10},
	}
}

// The simulation is deterministic: the same configuration gives the same
// wire and the same deliveries.
func TestDeterministic(t *testing.T) {
	var runs [2]*Sim
	for i := range runs {
		s, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		s.Send(A, 3000, 0)
		s.Send(B, 3000, 300)
		if !s.RunUntilQuiet(1e9) {
			t.Fatal("not quiet")
		}
		runs[i] = s
	}
	a, b := runs[0], runs[1]
	if a.Dir(A) != b.Dir(A) || a.Dir(B) != b.Dir(B) || a.Now() != b.Now() ||
		!slices.Equal(a.Delivered(A), b.Delivered(A)) || !slices.Equal(a.Delivered(B), b.Delivered(B)) {
		t.Fatal("two identical runs differ")
	}
	if a.Dir(A).Dropped == 0 || len(a.Delivered(B)) != 3000 || a.Corrupt(B) != 0 {
		t.Fatalf("run: %+v delivered %d", a.Dir(A), len(a.Delivered(B)))
	}
}

func TestUnprotectedLinkLoses(t *testing.T) {
	c := cfg()
	c.A, c.B = linkguardian.Config{}, linkguardian.Config{}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(A, 3000, 0)
	s.RunUntilQuiet(1e9)
	if got := len(s.Delivered(B)); got >= 3000 || got < 2800 || s.Corrupt(B) != 0 || s.Pool(A).InUse() != 0 {
		t.Fatalf("unprotected: delivered %d", got)
	}
}

// Injected frames reach the port's Receive like frames from the wire: the
// host gets the non-link ones (not frames its peer sent: counted corrupt)
// and every buffer comes back.
func TestInject(t *testing.T) {
	sc, rc := linkguardian.DefaultSenderConfig(), linkguardian.DefaultReceiverConfig()
	s, err := New(Config{A: linkguardian.Config{Sender: &sc}, B: linkguardian.Config{Receiver: &rc}})
	if err != nil {
		t.Fatal(err)
	}
	s.Inject(B, make([]byte, 3000)) // cut to 1514
	s.Inject(B, []byte{1, 2, 3})
	if !s.RunUntilQuiet(1e6) {
		t.Fatal("not quiet")
	}
	if c, ps := s.Corrupt(B), s.Port(B).Stats; c != 2 || ps.RxPassthrough != 2 {
		t.Fatalf("corrupt %d, port stats %+v; want both injected frames passed to the host", c, ps)
	}
	if s.Pool(B).InUse() != 0 || len(s.Pool(B).Errors()) != 0 {
		t.Fatalf("in use %d, errors %v", s.Pool(B).InUse(), s.Pool(B).Errors())
	}
}
