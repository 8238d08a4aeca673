package lgsim

import (
	"fmt"
	"testing"

	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// restartConfig is a loss-free link protected in both directions.
func restartConfig() Config {
	c := cfg()
	c.AB = DirConfig{Delay: 2000, Rate: 10e9}
	c.BA = DirConfig{Delay: 2000, Rate: 10e9}
	return c
}

const (
	helloMin = 20_000
	helloMax = 640_000
)

func sessionConfig(initA, initB seqhdr.Seq) Config {
	c := restartConfig()
	off := linksession.Offer{Window: 4096, Lanes: 1, MTU: 1500, Speed: 10000, Protect: linksession.Protect{Tx: true, Rx: true}}
	a := linksession.Config{Offer: off, Epoch: 0xA1, InitSeq: initA, HelloInterval: helloMin, MaxHelloInterval: helloMax,
		Policy: linksession.Policy{WaitUpTo: 1e12}}
	b := a
	b.Epoch, b.InitSeq = 0xB1, initB
	c.SessionA, c.SessionB = &a, &b
	// Session and control frames overtake up to a NIC TX ring of data.
	c.AB.PriorityLane, c.BA.PriorityLane = true, true
	c.TxBudget = 64 * 110
	return c
}

func isSession(i *Info) bool { return i.Link && i.Hdr.Type.IsSession() }

// checkDirection checks the frames side to received after t0: those after
// to's own reset (its first at or after t0) were each accepted by the sending
// port at or after that port's first reset at or after t0 (nothing stale from
// before the restart); all arrived once and in order;
// every frame the sending port accepted since then arrived; and the first
// arrived within bound of t0.
func checkDirection(t *testing.T, s *Sim, to Side, t0, bound int64) {
	t.Helper()
	from := 1 - to
	reset := func(side Side) int64 {
		for _, r := range s.Resets(side) {
			if r >= t0 {
				return r
			}
		}
		t.Fatalf("%v's port was never reset after the restart at %d ns (session events %v)", side, t0, s.SessionEvents(side))
		return 0
	}
	fresh, rxReset := reset(from), reset(to)
	last, got, first := int64(-1), 0, int64(-1)
	for i, id := range s.Delivered(to) {
		at := s.DeliveredAt(to)[i]
		if at < t0 {
			last = max(last, int64(id))
			continue
		}
		if sent := s.SentAt(from, id); at >= rxReset && sent < fresh {
			t.Fatalf("stale: frame %d accepted by %v's port at %d ns, before its reset at %d ns, delivered to %v at %d ns", id, from, sent, fresh, to, at)
		}
		if int64(id) <= last {
			t.Fatalf("frame %d delivered to %v after frame %d (duplicate or out of order)", id, to, last)
		}
		last = int64(id)
		if at < rxReset {
			continue // in flight from the old session, delivered before the receiver knew
		}
		got++
		if first < 0 {
			first = at
		}
	}
	want := 0
	for id := range s.Sent(from) {
		if s.SentAt(from, id) >= fresh {
			want++
		}
	}
	if got != want || got == 0 {
		t.Fatalf("%v received %d frames after the restart, %v's port accepted %d after its reset at %d ns", to, got, from, want, fresh)
	}
	if first-t0 > bound {
		t.Fatalf("traffic to %v resumed %d ns after the restart, bound %d ns", to, first-t0, bound)
	}
}

// Item 3: restart the sender, the receiver and both (each end is both for
// its own direction), while traffic flows both ways, with the surviving
// sender's numbering in either half of the serial space (and across the
// wrap), with session frames overtaking queued data, and with the first HELLO/HELLO-ACKs after the restart lost. The
// session resets the surviving port: traffic resumes within the HELLO
// backoff, nothing from before the restart is delivered after it, and no
// frame leaks.
func TestRestartSession(t *testing.T) {
	for _, init := range []seqhdr.Seq{1000, seqhdr.Half + 1000, seqhdr.Space - 1000} {
		for _, restart := range [][]Side{{A}, {B}, {A, B}} {
			for _, lose := range []int{0, 3} {
				t.Run(fmt.Sprintf("init%d_restart%v_lose%d", init, restart, lose), func(t *testing.T) {
					initB := init.Add(seqhdr.Half / 3)
					s, err := New(sessionConfig(init, initB))
					if err != nil {
						t.Fatal(err)
					}
					s.Send(A, 20000, 0)
					s.Send(B, 6000, 700)
					s.Run(1_000_000)
					if s.Session(A).State() != linksession.Up || len(s.Delivered(B)) == 0 || len(s.Delivered(A)) == 0 {
						t.Fatalf("before the restart: session %v, delivered %d/%d", s.Session(A).State(), len(s.Delivered(B)), len(s.Delivered(A)))
					}
					t0 := s.Now()
					for _, side := range restart {
						sc := *sessionConfig(0, 0).SessionA
						sc.Epoch, sc.InitSeq = uint64(0xC0+side), init.Add(seqhdr.Half/2+int(side)*777)
						if err := s.RestartWith(side, sc); err != nil {
							t.Fatal(err)
						}
					}
					for _, side := range []Side{A, B} {
						s.AddRule(side, DropIf(lose, isSession))
					}
					if !s.RunUntilQuiet(1e9) {
						t.Fatalf("link not quiet: sessions %v %v", s.Session(A).State(), s.Session(B).State())
					}
					// Each lost HELLO costs one backoff step; a few link round trips on top.
					bound := int64(0)
					for i, iv := 0, int64(helloMin); i <= lose+2; i, iv = i+1, min(2*iv, helloMax) {
						bound += iv
					}
					bound += 10 * (2000 + 1000)
					checkDirection(t, s, B, t0, bound)
					checkDirection(t, s, A, t0, bound)
					for _, side := range []Side{A, B} {
						if in := s.Pool(side).InUse(); in != 0 || len(s.Pool(side).Errors()) > 0 {
							t.Fatalf("%v: %d frames still held after the link went quiet (errors %v)", side, in, s.Pool(side).Errors())
						}
						if sess := s.Session(side); sess.State() != linksession.Up {
							t.Fatalf("%v: session %v", side, sess.State())
						}
					}
					survivor := s.Session(A)
					if len(restart) == 1 && restart[0] == A {
						survivor = s.Session(B)
					}
					if len(restart) == 1 && survivor.Stats.PeerRestarts != 1 {
						t.Fatalf("surviving end counted %d peer restarts", survivor.Stats.PeerRestarts)
					}
				})
			}
		}
	}
}

// Item 6: an asymmetric pair (A's TX buffer and window 4096, B's reorder
// window 512) on a long link under loss: the session agrees on the smaller window and the
// sender's credit follows it, so B never has to force its window forward
// over frames it could not hold.
func TestAsymmetricWindow(t *testing.T) {
	c := sessionConfig(3, seqhdr.Half+3)
	small := *c.B.Receiver
	small.Window = 512
	small.RenotifyInterval, small.AckNoTimeout = 150_000, 1_000_000 // above the 100 µs round trip
	c.B.Receiver = &small
	c.SessionB.Offer.Window = 512
	c.SessionB.Offer.Lanes, c.SessionA.Offer.MTU = 2, 9000
	c.AB.Random, c.AB.Seed = &linksim.Bernoulli{P: 0.01}, 3
	c.AB.Delay, c.BA.Delay = 50_000, 50_000 // ~900 frames in flight: more than B's window
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(A, 20000, 0)
	if !s.RunUntilQuiet(1e10) {
		t.Fatal("not quiet")
	}
	ga, _ := s.Session(A).Agreed()
	gb, _ := s.Session(B).Agreed()
	if ga.Window != 512 || gb.Window != 512 || ga.Lanes != 1 || gb.MTU != 1500 || s.Port(A).S.Credit() != 512 {
		t.Fatalf("agreed A %+v B %+v, credit %d", ga, gb, s.Port(A).S.Credit())
	}
	rs := s.Port(B).R.Stats
	if n := len(s.Delivered(B)); n != 20000 || rs.ForcedSkips != 0 || s.Pool(A).InUse() != 0 {
		t.Fatalf("delivered %d of 20000, forced skips %d", n, rs.ForcedSkips)
	}
}

// A restarted end whose HELLOs are lost recovers at the pace of the peer's
// LinkGuardian frames (each brings the next HELLO forward, at most one per
// HelloInterval), not at the pace of its growing backoff.
func TestRestartedEndHeardThroughData(t *testing.T) {
	const lose = 6
	s, err := New(sessionConfig(1000, 9000))
	if err != nil {
		t.Fatal(err)
	}
	s.Send(A, 30000, 300) // A keeps sending throughout
	s.Run(500_000)
	t0 := s.Now()
	sc := *sessionConfig(0, 0).SessionB
	sc.Epoch, sc.InitSeq = 0xBB, seqhdr.Half+5
	if err := s.RestartWith(B, sc); err != nil {
		t.Fatal(err)
	}
	s.AddRule(B, DropType(seqhdr.TypeHello, lose))
	if !s.RunUntilQuiet(1e10) {
		t.Fatal("not quiet")
	}
	// Backoff alone would need the sum of lose doubling intervals.
	backoff := int64(0)
	for i, iv := 0, int64(helloMin); i < lose; i, iv = i+1, min(2*iv, helloMax) {
		backoff += iv
	}
	bound := int64(lose+2)*helloMin + 10*(2000+1000)
	if bound >= backoff {
		t.Fatalf("test setup: bound %d must be below the backoff %d", bound, backoff)
	}
	checkDirection(t, s, B, t0, bound)
	if st := s.Session(B).Stats; st.RxNotAgreed == 0 || st.HellosTx < lose+1 {
		t.Fatalf("B's session %+v", st)
	}
}

// An end killed for good (its process gone: nothing more from it, not even
// session frames) while the survivor's kernel holds the receive point: the
// survivor takes it for dead within DeadAfter (and a few poll intervals),
// as it does with the point in the worker. Handing the point back and
// forth must not count as hearing the peer.
func TestDeadPeerWhileKernelHoldsPoint(t *testing.T) {
	for _, sleeping := range []bool{false, true} {
		t.Run(fmt.Sprintf("sleeping=%v", sleeping), func(t *testing.T) {
			c := sessionConfig(1000, 9000)
			c.Fast, c.Sleeping = true, sleeping
			for _, sc := range []*linksession.Config{c.SessionA, c.SessionB} {
				sc.KeepaliveInterval, sc.DeadAfter = 2_000_000, 10_000_000
			}
			s, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			s.Send(A, 1_000_000, 2000)
			s.Send(B, 1_000_000, 2000)
			s.Run(5_000_000)
			b := s.Session(B)
			if b.State() != linksession.Up || !s.Port(B).R.FastOwned() || s.FastDelivered(B) == 0 {
				t.Fatalf("before the kill: B's session %v, point the kernel's %v, delivered by the kernel %d",
					b.State(), s.Port(B).R.FastOwned(), s.FastDelivered(B))
			}
			killed := s.Now()
			s.Kill(A)
			slack := 2*c.AB.Delay + 10*1000 // 10 poll intervals (the default 1 µs)
			for b.State() == linksession.Up && s.Now()-killed < 10*c.SessionB.DeadAfter {
				s.Run(1000)
			}
			if b.State() == linksession.Up || b.Stats.PeerTimeouts != 1 {
				t.Fatalf("A killed %d ns ago: B's session %v, peer timeouts %d (DeadAfter %d ns)",
					s.Now()-killed, b.State(), b.Stats.PeerTimeouts, c.SessionB.DeadAfter)
			}
			if d := s.Now() - killed; d > c.SessionB.DeadAfter+slack {
				t.Fatalf("B took its dead peer for dead %d ns after the kill, DeadAfter %d ns + slack %d ns", d, c.SessionB.DeadAfter, slack)
			}
			// The survivor backs off its HELLOs to the dead peer.
			hellos := b.Stats.HellosTx
			s.Run(20 * c.SessionB.MaxHelloInterval)
			if n := b.Stats.HellosTx - hellos; n > 40 {
				t.Fatalf("%d HELLOs to a dead peer in %d backoff intervals", n, 20)
			}
		})
	}
}
