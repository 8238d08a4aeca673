package cellify

import (
	"math/rand/v2"
	"testing"
)

func TestVOQSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	s, err := NewVOQSet(VOQConfig{Src: 1, MaxVOQs: 2, RingBytes: 20000, Packing: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := VOQKey{Dst: 2, Port: 0, Class: 0}, VOQKey{Dst: 2, Port: 1, Class: 5}, VOQKey{Dst: 3}
	if s.Lookup(a) != nil {
		t.Fatal("Lookup created a VOQ")
	}
	f := testFrame(rng, 1, 1000)
	for range 19 {
		if !s.Enqueue(a, f) {
			t.Fatal("refused below the ring bound")
		}
	}
	if s.Enqueue(a, f) || s.Lookup(a).Drops != 1 || s.Lookup(a).DropBytes != 1000 {
		t.Fatalf("ring bound: %+v", s.Lookup(a))
	}
	if !s.Enqueue(b, f) || s.Enqueue(c, f) || s.NoVOQ != 1 {
		t.Fatal("MaxVOQs not enforced")
	}
	if s.Get(VOQKey{Dst: 0}) != nil || s.Get(VOQKey{Dst: 2, Class: Classes}) != nil {
		t.Fatal("VOQ for an invalid key")
	}
	all := s.All()
	if len(all) != 2 || all[0].Key != a || all[1].Key != b {
		t.Fatalf("All: %v", all)
	}
	va := s.Lookup(a)
	if va.Enqueued() != 19*1002 || s.Backlog() != 20*1002 {
		t.Fatalf("enqueued %d, backlog %d", va.Enqueued(), s.Backlog())
	}
	buf := make([]byte, 2048)
	n, took := va.Cut(buf, 5000, 1500)
	h, err := ParseCell(buf[:n])
	if err != nil || took != 1500 || va.Sent() != 1500 || h.Dst != 2 || h.Src != 1 || h.Hops != DefaultHops || h.Port != 0 {
		t.Fatalf("cut %d: %+v %v, sent %d", took, h, err, va.Sent())
	}
	if _, err := NewVOQSet(VOQConfig{}); err == nil {
		t.Fatal("VOQ set without a source edge")
	}
}

// TestIngress is the way of a host frame at an ingress edge: its
// destination MAC picks the VOQ, or a flood limited by a token bucket.
func TestIngress(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	voqs, _ := NewVOQSet(VOQConfig{Src: 1, Packing: true})
	macs := NewMACTable(16, 1e9)
	var flood TokenBucket
	flood.Reset(0, 1000, 3000) // 1 kB/s, 3 frames of burst
	macs.Learn(0, mac(7), 4, 2)
	floods, dropped := 0, 0
	ingress := func(now int64, frame []byte) {
		d := macs.Lookup(now, [6]byte(frame[0:6]))
		if d.Flood {
			if flood.Take(now, len(frame)) {
				floods++
			} else {
				dropped++
			}
			return
		}
		voqs.Enqueue(VOQKey{Dst: d.Edge, Port: d.Port, Class: 3}, frame)
	}
	for i := range 10 {
		f := testFrame(rng, i, 1000)
		copy(f, []byte{0x02, 0, 0, 0, 0, 7})
		if i%2 == 1 {
			copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		}
		ingress(int64(i)*1e6, f)
	}
	v := voqs.Lookup(VOQKey{Dst: 4, Port: 2, Class: 3})
	if v == nil || v.Frames() != 5 || floods != 3 || dropped != 2 {
		t.Fatalf("voq %+v, %d floods, %d dropped", v, floods, dropped)
	}
}
