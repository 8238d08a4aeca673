package host

import "testing"

// TestRetRingHoldsPerDestination: returned frames come back out for their
// destination only, byte for byte, and the counts the demand report and
// the completion check read follow; a full ring refuses.
func TestRetRingHoldsPerDestination(t *testing.T) {
	var q retRing
	q.init(4)
	for i := range retCap {
		f := []byte{byte(i), byte(i >> 8), 1, 2, 3}
		if !q.put(f, 1+i%3, int64(len(f))) {
			t.Fatalf("put %d refused", i)
		}
	}
	if q.put([]byte{9}, 1, 1) {
		t.Fatal("a full ring took a frame")
	}
	if q.total != retCap || q.n[1]+q.n[2]+q.n[3] != retCap || q.n[0] != 0 || q.find(0) >= 0 {
		t.Fatalf("counts %d %v", q.total, q.n)
	}
	for q.n[2] > 0 {
		k := q.find(2)
		if k < 0 || q.dst[k] != 2 {
			t.Fatalf("find(2) = %d", k)
		}
		i := int(q.buf[k][0]) | int(q.buf[k][1])<<8
		if i%3 != 1 || q.l[k] != 5 {
			t.Fatalf("frame %d (%d bytes) held for h3", i, q.l[k])
		}
		q.take(k, 5)
	}
	if q.bytes[2] != 0 || q.find(2) >= 0 || q.total != q.n[1]+q.n[3] {
		t.Fatalf("after taking h3's: %d %v %v", q.total, q.n, q.bytes)
	}
	if !q.put([]byte{7}, 2, 1) || q.find(2) < 0 {
		t.Fatal("a freed slot was not reused")
	}
}
