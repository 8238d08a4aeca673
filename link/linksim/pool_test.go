package linksim

import "testing"

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
