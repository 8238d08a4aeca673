package cellify

import (
	"bytes"
	"testing"
)

// FuzzCellRxModel: whatever the frame, the kernel's rule (CellRxModel,
// which the program is held to) delivers only what the worker's own path
// would deliver at the same point: exactly one record, the same host frame,
// and moves the point by one cell and one record; anything else leaves the
// frame to the worker with the point untouched or handed over.
func FuzzCellRxModel(f *testing.F) {
	first := rxCell(f, 999, 76, 0, 0x1111, rxRecord(0x1111, 0, 40))
	f.Add(rxCell(f, 1000, 77, 0, 0x1111, rxRecord(0x1111, 1, 40)))
	f.Add(rxCell(f, 1000, 77, 0, 0x1111, rxRecord(0x1111, 1, 20)[:17]))
	f.Add(rxCell(f, 1000, 77, 0, 0x1111, append(rxRecord(0x1111, 1, 20), rxRecord(0x1111, 2, 20)...)))
	f.Add(rxCell(f, 1001, 77, 0, 0x1111, rxRecord(0x1111, 1, 40)))
	f.Add(rxCell(f, 1000, 77, 0, 0x2222, rxRecord(0x1111, 1, 40)))
	f.Add(rxCell(f, 1000, 77, NoRecord, 0x1111, rxRecord(0x1111, 1, 40)[:20]))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m := NewCellRxModel(3)
		m.Hosts[0] = true
		var got [][]byte
		r, _ := NewReassembler(ReasmConfig{Self: 3}, func(_ StreamKey, rec []byte) { got = append(got, bytes.Clone(rec[1:])) })
		r.SetKernel(NewKernelRx(m, []bool{true}))
		r.Receive(1, first)
		r.HandBack()
		i, ok := m.Idx[RxKey(StreamKey{Src: 7})]
		if !ok || m.S[i].Point.Load() != RxPoint(1000, 77) {
			t.Fatalf("stream not given at 1000/77")
		}
		// The worker's path at the same point, without a kernel.
		var want [][]byte
		g, _ := NewReassembler(ReasmConfig{Self: 3}, func(_ StreamKey, rec []byte) { want = append(want, bytes.Clone(rec[1:])) })
		g.Receive(1, first)
		want = want[:0]

		v, host, port := m.Offer(bytes.Clone(frame), 0, 1<<30)
		p := m.S[i].Point.Load()
		if v != RxDelivered {
			if p != RxPoint(1000, 77) && p != RxPoint(1000, 77)&^RxOwned {
				t.Fatalf("not delivered, point %#x", p)
			}
			return
		}
		if s, rn := RxPointSeq(p); s != 1001 || rn != 78 || p&RxOwned == 0 || port != 0 {
			t.Fatalf("delivered: point %#x, port %d", p, port)
		}
		if len(host) < MinRecordFrame {
			t.Fatalf("delivered %d bytes", len(host))
		}
		g.Receive(2, frame)
		if len(want) != 1 || !bytes.Equal(want[0], host) {
			t.Fatalf("the kernel delivers %x, the worker %x", host, want)
		}
	})
}
