package simlink

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
)

func TestLossModelRates(t *testing.T) {
	const n = 1_000_000
	for _, m := range []struct {
		name  string
		model LossModel
		burst float64
	}{
		{"bernoulli", &Bernoulli{P: 0.01}, 1},
		{"bursty", &Bursty{P: 0.01, MeanBurst: 3}, 3},
		{"bursty-time", &Bursty{P: 0.01, MeanBurst: 3, Slot: 100}, 3},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		lost, bursts, run := 0, 0, 0
		for i := range n {
			if m.model.Drop(r, int64(i)*100) {
				lost++
				run++
			} else if run > 0 {
				bursts++
				run = 0
			}
		}
		rate, mean := float64(lost)/n, float64(lost)/float64(bursts)
		if math.Abs(rate-0.01) > 0.001 || math.Abs(mean-m.burst) > 0.1*m.burst {
			t.Errorf("%s: loss rate %.4f mean burst %.2f", m.name, rate, mean)
		}
	}
}

func TestPoolOwnership(t *testing.T) {
	p := NewPool(2, 2048, 256)
	if _, ok := p.Alloc(2048 - 256 + 1); ok || len(p.Errors()) != 1 || p.InUse() != 0 {
		t.Fatalf("alloc of more than a buffer holds: ok %v, errors %v, in use %d", ok, p.Errors(), p.InUse())
	}
	p = NewPool(2, 2048, 256)
	a, _ := p.Alloc(2048 - 256)
	b, _ := p.Alloc(64)
	if _, ok := p.Alloc(64); ok {
		t.Fatal("alloc beyond capacity")
	}
	p.Free(a + 8) // any address in the buffer
	p.Free(a)
	if len(p.Errors()) != 1 || p.InUse() != 1 {
		t.Fatalf("double free not detected: %v", p.Errors())
	}
	p.Free(b - 8)
	if p.InUse() != 0 {
		t.Fatal("InUse")
	}
}

func cfg() Config {
	sc := linkguardian.DefaultSenderConfig()
	rc := linkguardian.DefaultReceiverConfig()
	rc.RenotifyInterval, rc.AckNoTimeout = 20_000, 100_000
	return Config{
		A:  linkguardian.Config{Sender: &sc, Receiver: &rc},
		B:  linkguardian.Config{Sender: &sc, Receiver: &rc},
		AB: DirConfig{Delay: 2000, Rate: 10e9, Random: &Bernoulli{P: 0.02}, Seed: 9, CtrlJitter: 500},
		BA: DirConfig{Delay: 2000, Rate: 10e9, Random: &Bursty{P: 0.02, MeanBurst: 2, Slot: 100}, Seed: 10},
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
