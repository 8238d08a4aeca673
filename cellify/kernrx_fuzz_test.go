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
		i, ok := m.Slot(RxKey(StreamKey{Src: 7}))
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

// FuzzKernelRxHandOver drives the kernel's rule and the worker's
// reassembly through an interleaving the input picks: which in-flight cell
// arrives next (cells overtake each other, some are lost or duplicated),
// when the worker takes the cells passed to it, when it hands points back,
// when time passes, when the source restarts, on which CPU and when a cell
// arrives. Whatever the order, every record is delivered at most once, in
// order within its epoch, and none of an epoch after one of a later epoch.
func FuzzKernelRxHandOver(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 5, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 4, 5, 2, 0, 0, 4, 5, 0, 0, 0, 6, 4, 5, 0, 0})
	f.Add([]byte{0, 4, 5, 0, 0, 7, 0, 0, 4, 5, 8, 0, 0, 0, 4, 5, 0, 0})
	f.Add([]byte{3, 3, 3, 0, 0, 4, 5, 6, 6, 6, 4, 5, 0, 9, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := NewCellRxModel(3)
		m.Hosts[0] = true
		var log rxLog
		r, _ := NewReassembler(ReasmConfig{Self: 3, Window: 64, Timeout: 1000, EpochHold: 1 << 50}, func(_ StreamKey, rec []byte) { log.add(rec[1:], false) })
		r.SetKernel(NewKernelRx(m, []bool{true}))
		srcs := []*rxSource{{ep: 0x1111}}
		eps := []uint16{0x1111}
		var flight, toGo [][]byte
		now := int64(0)
		var know uint64
		gen := func() {
			s := srcs[len(srcs)-1]
			flight = append(flight, s.next(t, nil)...)
		}
		for _, op := range ops {
			switch op % 10 {
			case 0, 1, 2, 3: // a cell arrives at the kernel (op%4: how far ahead)
				for len(flight) < 4 {
					gen()
				}
				i := int(op%10) % len(flight)
				c := flight[i]
				flight = append(flight[:i], flight[i+1:]...)
				know += uint64(op/10) << 12
				if v, host, _ := m.Offer(bytes.Clone(c), uint32(op/10%2), know); v == RxDelivered {
					log.add(host, true)
				} else {
					toGo = append(toGo, c)
				}
			case 4: // the worker takes what it was passed
				for _, c := range toGo {
					now += 10
					r.Receive(now, c)
				}
				toGo = toGo[:0]
			case 5:
				r.HandBack()
			case 6: // time passes: holes time out
				now += 400
				r.Poll(now)
			case 7: // a copy of a cell in flight
				if len(flight) > 0 {
					flight = append(flight, bytes.Clone(flight[0]))
				}
			case 8: // the source restarts (once: the reassembly remembers
				// one epoch before the current, and takes an older one for
				// a new boot)
				if len(srcs) < 2 {
					srcs = append(srcs, &rxSource{ep: 0x2222})
					eps = append(eps, 0x2222)
				}
			case 9: // a cell is lost
				if len(flight) > 0 {
					flight = flight[1:]
				}
			}
		}
		for _, c := range toGo {
			now += 10
			r.Receive(now, c)
		}
		r.Poll(now + 1e9)
		log.check(t, eps)
	})
}
