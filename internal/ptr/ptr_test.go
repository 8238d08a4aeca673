package ptr

import "testing"

func TestCopy(t *testing.T) {
	if Copy[int](nil) != nil {
		t.Error("Copy(nil) is not nil")
	}
	v := 7
	c := Copy(&v)
	if c == &v || *c != 7 {
		t.Fatalf("Copy(&7) = %p → %d, want a new pointer to 7 (original %p)", c, *c, &v)
	}
	*c = 8
	if v != 7 {
		t.Errorf("changing the copy changed the original to %d", v)
	}
}
