package linksim

import "testing"

// TestSized: a request gets a buffer of the smallest size that holds it
// (none beyond Big), a freed buffer serves the next request of its size,
// and a free of a buffer that is not live is refused and changes nothing.
func TestSized(t *testing.T) {
	m := Sized{Small: 64, Big: 256}
	a, ok := m.Alloc(64)
	if !ok || len(m.Buf(a)) != 64 {
		t.Fatalf("Alloc(64): %v, %d bytes", ok, len(m.Buf(a)))
	}
	b, ok := m.Alloc(65)
	if !ok || len(m.Buf(b)) != 256 {
		t.Fatalf("Alloc(65): %v, %d bytes", ok, len(m.Buf(b)))
	}
	if _, ok := m.Alloc(257); ok {
		t.Fatal("Alloc(257) beyond Big succeeded")
	}
	if m.InUse() != 2 {
		t.Fatalf("InUse %d, want 2", m.InUse())
	}
	if !m.Free(a) || m.Free(a) || m.Free(99) {
		t.Fatal("Free: want true once, then false, and false for a handle never allocated")
	}
	if m.InUse() != 1 {
		t.Fatalf("InUse %d after a refused free, want 1", m.InUse())
	}
	if c, _ := m.Alloc(10); c != a {
		t.Fatalf("Alloc(10) got buffer %d, want the freed small one %d", c, a)
	}
	if !m.Free(b) {
		t.Fatal("Free of the big buffer refused")
	}
	if d, _ := m.Alloc(200); d != b {
		t.Fatalf("Alloc(200) got buffer %d, want the freed big one %d", d, b)
	}
}
