package link

import "testing"

// TestRing: frames leave in the order they came, a full ring refuses one
// more, the bytes follow, and pushing and popping allocate nothing.
func TestRing(t *testing.T) {
	r := NewRing(3)
	for i := 1; i <= 3; i++ {
		if !r.Push(Frame{H: Handle(i), Len: 10 * i}) {
			t.Fatalf("push %d refused", i)
		}
	}
	if r.Push(Frame{H: 4, Len: 1}) || r.Len() != 3 || r.Bytes() != 60 {
		t.Fatalf("full ring: len %d bytes %d", r.Len(), r.Bytes())
	}
	for round := 0; round < 5; round++ { // across the wrap
		f := r.Pop()
		if r.Head().H != f.H+1 && r.Len() > 0 {
			t.Fatalf("round %d: popped %d, head %d", round, f.H, r.Head().H)
		}
		f.H += 3
		r.Push(f)
	}
	if r.Len() != 3 || r.Bytes() != 60 {
		t.Fatalf("after the rounds: len %d bytes %d", r.Len(), r.Bytes())
	}
	if n := testing.AllocsPerRun(100, func() { r.Push(r.Pop()) }); n != 0 {
		t.Errorf("push and pop allocate %v", n)
	}
}
