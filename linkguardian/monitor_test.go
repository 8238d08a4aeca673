package linkguardian_test

import (
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// TestMonitorLateFrame: in monitor mode frames are delivered as they come.
// A frame that arrives after the gap it left was counted (reordered on the
// link) is delivered, not dropped as a duplicate, and counted as late, so
// that LostUnprotected - LateDelivered is the frames really lost; a true
// duplicate is still dropped. Before the fix, frame 2 arriving after 3 was
// dropped as a duplicate.
func TestMonitorLateFrame(t *testing.T) {
	pool := linksim.NewPool(64, 2048, 256)
	rc := *receiverCfg(linkguardian.Monitor)
	rc.Window = 16
	p := newEndpoint(t, linkguardian.Config{Receiver: &rc}, pool)
	var got []seqhdr.Seq
	recv := func(q seqhdr.Seq) {
		f := control(t, pool, seqhdr.Header{Type: seqhdr.TypeData, Seq: q, EtherType: 0x0800})
		// The payload names the frame (control pads with zeros).
		pool.Bytes(f.H, f.Len)[seqhdr.DataOffset] = byte(q)
		p.Receive(0, f)
		for _, d := range p.Out.Deliver {
			got = append(got, seqhdr.Seq(pool.Bytes(d.H, d.Len)[seqhdr.DataOffset-seqhdr.MaxOverhead]))
		}
		release(p, pool)
	}
	for _, q := range []seqhdr.Seq{0, 1, 3, 2, 4, 3, 7, 6, 5, 5, 9} {
		recv(q)
	}
	want := []seqhdr.Seq{0, 1, 3, 2, 4, 7, 6, 5, 9}
	rs := p.R.Stats
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v (stats %+v)", got, want, rs)
	}
	if rs.LostUnprotected != 4 || rs.LateDelivered != 3 || rs.DupDropped != 2 || rs.LostUnprotected-rs.LateDelivered != 1 {
		t.Fatalf("lost %d late %d dup %d; want 4 counted lost, 3 late (1 really lost: 8), 2 duplicates", rs.LostUnprotected, rs.LateDelivered, rs.DupDropped)
	}
	// A frame from further back than the window is not delivered again.
	recv(seqhdr.Seq(9).Add(-int(rc.Window)))
	// After the window has moved on, a late frame of an old gap is a
	// duplicate (its slot was reused).
	for q := seqhdr.Seq(10); q < 40; q++ {
		recv(q)
	}
	recv(8)
	if p.R.Stats.LateDelivered != 3 || len(got) != len(want)+30 {
		t.Fatalf("frames beyond the window delivered: late %d, %d delivered", p.R.Stats.LateDelivered, len(got))
	}
	// Back to protection: the slots of monitor gaps do not confuse lg.
	if !p.R.SetDelivery(0, linkguardian.InOrder) {
		t.Fatal("SetDelivery(lg) refused")
	}
	recv(41) // 40 lost: now a protected hole
	if p.R.Missing() != 1 {
		t.Fatalf("lg after monitor: %d missing, want 1", p.R.Missing())
	}
	recv(40)
	if p.R.Missing() != 0 || !slices.Equal(got[len(got)-2:], []seqhdr.Seq{40, 41}) {
		t.Fatalf("lg after monitor delivered %v, %d missing", got[len(got)-2:], p.R.Missing())
	}
	p.Poll(1e9, true)
	release(p, pool)
	if pool.InUse() != 0 || len(pool.Errors()) != 0 {
		t.Fatalf("in use %d, errors %v", pool.InUse(), pool.Errors())
	}
}
