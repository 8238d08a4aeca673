package xdp

import "testing"

func TestFreeList(t *testing.T) {
	f := NewFreeList(3)
	if _, ok := f.Pop(); ok || f.Exhausted() != 1 {
		t.Fatalf("pop from empty: ok=%v exhausted=%d", ok, f.Exhausted())
	}
	for _, a := range []uint64{10, 20, 30} {
		if !f.Push(a) {
			t.Fatalf("push %d failed", a)
		}
	}
	if f.Push(40) || f.Overflows() != 1 || f.Len() != 3 {
		t.Fatalf("push onto full: overflows=%d len=%d", f.Overflows(), f.Len())
	}
	if a, ok := f.Pop(); !ok || a != 30 {
		t.Fatalf("LIFO: got %d", a)
	}
	dst := make([]uint64, 5)
	if n := f.PopN(dst); n != 2 || dst[0] != 10 || dst[1] != 20 || f.Exhausted() != 4 {
		t.Fatalf("PopN n=%d dst=%v exhausted=%d", n, dst[:n], f.Exhausted())
	}
	if n := f.PushN([]uint64{1, 2, 3, 4}); n != 3 || f.Overflows() != 2 || f.Len() != 3 {
		t.Fatalf("PushN n=%d overflows=%d", n, f.Overflows())
	}
	if n := f.PopN(dst[:2]); n != 2 || dst[0] != 2 || dst[1] != 3 {
		t.Fatalf("PopN order: %v", dst[:2])
	}
	if allocs := testing.AllocsPerRun(100, func() {
		f.Push(7)
		f.Pop()
		f.PushN(dst[:1])
		f.PopN(dst[:1])
	}); allocs != 0 {
		t.Fatalf("allocates %.1f", allocs)
	}
	z := NewFreeList(-1)
	if z.Push(1) || z.Cap() != 0 {
		t.Fatal("zero-capacity list")
	}
}

func TestUmemFramesAndFreeList(t *testing.T) {
	u, err := NewUmem(UmemConfig{FrameSize: 2048, FrameCount: 16, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.DataOffset() != 64+256 || u.MaxFrameLen() != 2048-320 {
		t.Fatalf("DataOffset %d MaxFrameLen %d", u.DataOffset(), u.MaxFrameLen())
	}
	if u.FrameBase(5*2048+300) != 5*2048 || u.FrameIndex(5*2048+300) != 5 || u.FrameAddr(5) != 5*2048 {
		t.Fatal("frame arithmetic")
	}
	b := u.Bytes(3*2048+10, 4)
	copy(b, "abcd")
	if string(u.Bytes(3*2048+10, 4)) != "abcd" || cap(b) != 4 {
		t.Fatal("Bytes does not alias the UMEM")
	}
	if u.Bytes(16*2048-2, 4) != nil || u.Frame(16*2048) != nil {
		t.Fatal("out-of-range access not refused")
	}
	if len(u.Frame(2*2048+100)) != 2048-100 {
		t.Fatal("Frame length")
	}
	f := u.NewFreeList()
	if f.Len() != 16 {
		t.Fatalf("free list holds %d", f.Len())
	}
	if a, _ := f.Pop(); a != 0 {
		t.Fatalf("first popped frame %d, want 0", a)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := NewUmem(UmemConfig{FrameSize: 1000}); err == nil {
		t.Fatal("frame size 1000 accepted")
	}
}
