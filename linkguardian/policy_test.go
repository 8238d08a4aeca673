package linkguardian_test

import (
	"errors"
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/link/lossmon"
	"github.com/linkfabric/linkfabric/linkguardian"
)

func TestDecide(t *testing.T) {
	p := linkguardian.DefaultPolicy()
	off := linkguardian.Decision{Delivery: linkguardian.Monitor}
	lg := func(n int) linkguardian.Decision {
		return linkguardian.Decision{Delivery: linkguardian.InOrder, Copies: n}
	}
	nb := func(n int) linkguardian.Decision {
		return linkguardian.Decision{Delivery: linkguardian.NonBlocking, Copies: n}
	}
	cases := []struct {
		name string
		rate float64
		cur  linkguardian.Decision
		want linkguardian.Decision
	}{
		{"zero decision, clean link", 0, linkguardian.Decision{}, off},
		{"zero decision is off, below activation", 5e-9, linkguardian.Decision{}, off},
		{"no copies is off, disable band", 7e-2, lg(0), off},
		{"off, below activation", 5e-9, off, off},
		{"off, at activation 1e-8", 1e-8, off, lg(1)},
		{"off, 1e-4", 1e-4, off, lg(1)},
		{"off, 1e-3 → 2 copies", 1e-3, off, lg(2)},
		{"off, jump straight to lgnb range", 2e-2, off, nb(4)},
		{"off, in disable-hysteresis band stays off", 7e-2, off, off},
		{"off, above disable", 0.3, off, off},
		{"unknown delivery treated as off", 1e-3, linkguardian.Decision{Delivery: 7, Copies: 1}, lg(2)},
		{"monitor with copies is off", 5e-9, linkguardian.Decision{Delivery: linkguardian.Monitor, Copies: 1}, off},
		{"lg, hysteresis band low keeps protection", 5e-9, lg(1), lg(1)},
		{"lg, below ProtectOff turns off", 5e-10, lg(1), off},
		{"lg, just under NBOn stays lg", 9.9e-3, lg(3), lg(3)},
		{"lg, at NBOn → lgnb", 1e-2, lg(3), nb(3)},
		{"lgnb, NB hysteresis band stays lgnb", 7e-3, nb(3), nb(3)},
		{"lgnb, below NBOff → lg", 4e-3, nb(3), lg(3)},
		{"lgnb, below ProtectOff → off", 0, nb(3), off},
		{"lgnb, disable band keeps protection", 7e-2, nb(7), nb(6)},
		{"lgnb, at DisableOn → off", 0.1, nb(8), off},
		{"lg, at DisableOn → off", 0.5, lg(1), off},
		{"copies follow rate down", 1e-5, lg(3), lg(1)},
		{"NaN keeps current", math.NaN(), nb(3), nb(3)},
		{"NaN keeps off", math.NaN(), off, off},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := p.Decide(c.rate, c.cur); got != c.want {
				t.Fatalf("Decide(%g, %v) = %+v, want %+v", c.rate, c.cur, got, c.want)
			}
		})
	}
}

// A rate oscillating within a hysteresis band never flaps.
func TestDecideNoFlap(t *testing.T) {
	p := linkguardian.DefaultPolicy()
	d := p.Decide(2e-8, off())
	if d.Delivery != linkguardian.InOrder {
		t.Fatalf("start: %v", d)
	}
	changes := 0
	for i := 0; i < 1000; i++ {
		rate := 3e-9 // between ProtectOff and ProtectOn
		if i%2 == 1 {
			rate = 8e-3 // between NBOff and NBOn
		}
		n := p.Decide(rate, d)
		if n.Delivery != d.Delivery || n.Protected() != d.Protected() {
			changes++
		}
		d = n
	}
	if changes != 0 {
		t.Fatalf("mode changed %d times inside hysteresis bands", changes)
	}
}

func TestDecideDisabledRules(t *testing.T) {
	p := linkguardian.DefaultPolicy()
	p.NBOn, p.DisableOn, p.DisableOff = math.Inf(1), math.Inf(1), math.Inf(1)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	d := p.Decide(0.9, off())
	if d != (linkguardian.Decision{Delivery: linkguardian.InOrder, Copies: linkguardian.MaxCopies}) {
		t.Fatalf("with fallback rules off, 0.9 → %+v", d)
	}
	p.MaxCopies = 2
	if d := p.Decide(0.9, d); d.Copies != 2 {
		t.Fatalf("MaxCopies 2 → %+v", d)
	}
}

func TestValidate(t *testing.T) {
	if err := linkguardian.DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy invalid: %v", err)
	}
	mut := []struct {
		name string
		f    func(*linkguardian.Policy)
	}{
		{"target 0", func(p *linkguardian.Policy) { p.Target = 0 }},
		{"target 1", func(p *linkguardian.Policy) { p.Target = 1 }},
		{"ProtectOff 0", func(p *linkguardian.Policy) { p.ProtectOff = 0 }},
		{"ProtectOff > ProtectOn", func(p *linkguardian.Policy) { p.ProtectOff = 1e-7 }},
		{"NBOff > NBOn", func(p *linkguardian.Policy) { p.NBOff = 2e-2 }},
		{"ProtectOn > NBOff", func(p *linkguardian.Policy) { p.ProtectOn = 6e-3 }},
		{"DisableOff ≤ ProtectOn", func(p *linkguardian.Policy) { p.DisableOff = 1e-8 }},
		{"DisableOff > DisableOn", func(p *linkguardian.Policy) { p.DisableOff = 0.2 }},
		{"negative MaxCopies", func(p *linkguardian.Policy) { p.MaxCopies = -1 }},
		{"NaN ProtectOn", func(p *linkguardian.Policy) { p.ProtectOn = math.NaN() }},
	}
	for _, m := range mut {
		p := linkguardian.DefaultPolicy()
		m.f(&p)
		if err := p.Validate(); !errors.Is(err, linkguardian.ErrInvalidPolicy) {
			t.Errorf("%s: Validate = %v, want an error", m.name, err)
		}
	}
}

func off() linkguardian.Decision { return linkguardian.Decision{Delivery: linkguardian.Monitor} }

// The loss monitor drives the policy: a link degrading from clean to 1e-3
// gets protected with 2 copies.
func TestMonitorDrivesPolicy(t *testing.T) {
	const ms = int64(1_000_000)
	m, err := lossmon.New(lossmon.Config{Window: 1000 * ms, Buckets: 10, MinSamples: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	p := linkguardian.DefaultPolicy()
	d := off()
	for now := int64(0); now < 3000*ms; now += 10 * ms {
		lost := uint64(0)
		if now >= 1000*ms {
			lost = 100 // of 100k
		}
		m.Observe(now, 100_000-lost, lost)
		if r, ok := m.Rate(now); ok {
			d = p.Decide(r, d)
		}
	}
	if d != (linkguardian.Decision{Delivery: linkguardian.InOrder, Copies: 2}) {
		t.Fatalf("final decision %+v", d)
	}
}
