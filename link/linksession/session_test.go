package linksession

import (
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// fakeLink records resets and stands in for a linkguardian.Endpoint's numbering.
type fakeLink struct {
	next   seqhdr.Seq
	resets []struct{ tx, rx seqhdr.Seq }
}

func (l *fakeLink) TxNext() seqhdr.Seq { return l.next }
func (l *fakeLink) Reset(now int64, tx, rx seqhdr.Seq) {
	l.next = tx
	l.resets = append(l.resets, struct{ tx, rx seqhdr.Seq }{tx, rx})
}

// pair is two sessions joined by a wire of fixed delay; drop decides per
// frame (direction 0 is a→b).
type pair struct {
	a, b   *Session
	la, lb *fakeLink
	now    int64
	delay  int64
	drop   func(dir int, f []byte) bool
	flight []msg
	sent   [2]int
	events [2][]Event
}

type msg struct {
	at  int64
	dir int
	f   []byte
}

func offer() Offer {
	return Offer{Window: 4096, Lanes: 2, MTU: 1500, Speed: 10000, Protect: Protect{Tx: true, Rx: true}}
}

func newPair(t *testing.T, ca, cb Config) *pair {
	t.Helper()
	p := &pair{la: &fakeLink{}, lb: &fakeLink{}, delay: 10_000}
	var err error
	if p.a, err = New(ca, p.la); err != nil {
		t.Fatal(err)
	}
	if p.b, err = New(cb, p.lb); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pair) side(dir int) *Session {
	if dir == 0 {
		return p.a
	}
	return p.b
}

// step advances by dt: deliver what arrived, poll both, send what is due.
func (p *pair) run(d, dt int64) {
	for end := p.now + d; p.now < end; p.now += dt {
		keep := p.flight[:0]
		for _, m := range p.flight {
			if m.at <= p.now {
				to := 1 - m.dir
				p.events[to] = append(p.events[to], p.side(to).Receive(p.now, m.f))
			} else {
				keep = append(keep, m)
			}
		}
		p.flight = keep
		for dir := range 2 {
			s := p.side(dir)
			s.Poll(p.now)
			for {
				b := make([]byte, seqhdr.MinFrameLen)
				n := s.Frame(p.now, b)
				if n == 0 {
					break
				}
				p.sent[dir]++
				if p.drop != nil && p.drop(dir, b[:n]) {
					continue
				}
				p.flight = append(p.flight, msg{p.now + p.delay, dir, b[:n]})
			}
		}
	}
}

func cfgs() (Config, Config) {
	a := Config{LocalMAC: [6]byte{2, 0, 0, 0, 0, 0xA}, PeerMAC: [6]byte{2, 0, 0, 0, 0, 0xB}, Offer: offer(), Epoch: 11, InitSeq: 500, HelloInterval: 100_000, MaxHelloInterval: 1_600_000}
	b := a
	b.LocalMAC, b.PeerMAC, b.Epoch, b.InitSeq = a.PeerMAC, a.LocalMAC, 22, seqhdr.Half+77
	return a, b
}

// Asymmetric offers: both ends agree on the per-field minimum and
// on crossed sequence numbers.
func TestHandshakeAgreesOnMinimum(t *testing.T) {
	ca, cb := cfgs()
	cb.Offer = Offer{Window: 512, Lanes: 1, MTU: 9000, Speed: 25000, Protect: Protect{Tx: true, Rx: true, RxMode: 1}}
	ca.Offer.MTU = 1400
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	if p.a.State() != Up || p.b.State() != Up {
		t.Fatalf("states %v %v", p.a.State(), p.b.State())
	}
	ga, oka := p.a.Agreed()
	gb, okb := p.b.Agreed()
	want := Agreed{Window: 512, Lanes: 1, MTU: 1400, Speed: 10000}
	for _, g := range []Agreed{ga, gb} {
		if g.Window != want.Window || g.Lanes != want.Lanes || g.MTU != want.MTU || g.Speed != want.Speed {
			t.Fatalf("agreed %+v, want the minimum %+v", g, want)
		}
	}
	if !oka || !okb || ga.TxSeq != gb.RxSeq || ga.RxSeq != gb.TxSeq || ga.TxSeq != 500 || gb.TxSeq != seqhdr.Half+77 || ga.Peer.RxMode != 1 {
		t.Fatalf("sequence numbers not crossed: %+v %+v", ga, gb)
	}
	if len(p.la.resets) != 1 || len(p.lb.resets) != 1 || p.a.Stats.PeerRestarts != 0 || ga.QuantumNanos() != 51.2 {
		t.Fatalf("resets %v %v stats %+v", p.la.resets, p.lb.resets, p.a.Stats)
	}
}

// Losing HELLOs and HELLO-ACKs costs backoff time, never a stall.
func TestHandshakeUnderLoss(t *testing.T) {
	for _, lose := range []int{1, 2, 3, 5} {
		ca, cb := cfgs()
		p := newPair(t, ca, cb)
		n := 0
		p.drop = func(dir int, f []byte) bool { n++; return n <= lose*2 }
		// Backoff: lose rounds cost at most the sum of doubling intervals.
		bound := int64(0)
		for i, iv := 0, ca.HelloInterval; i <= lose+1; i, iv = i+1, min(2*iv, ca.MaxHelloInterval) {
			bound += iv
		}
		bound += 4 * p.delay
		p.run(bound, 1000)
		if p.a.State() != Up || p.b.State() != Up {
			t.Fatalf("lose %d: not up after %d ns: %v %v", lose, bound, p.a.State(), p.b.State())
		}
	}
}

// A restarted peer (new epoch) resets our link where our sender got to, is
// counted, and the session comes up again.
func TestPeerRestart(t *testing.T) {
	ca, cb := cfgs()
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	p.la.next = 100_000 // A's sender has moved on
	cb.Epoch, cb.InitSeq = 33, 9
	p.lb = &fakeLink{}
	p.b, _ = New(cb, p.lb)
	p.events[0] = nil
	p.run(1_000_000, 1000)
	if p.a.State() != Up || p.b.State() != Up || p.a.Stats.PeerRestarts != 1 {
		t.Fatalf("states %v %v, peer restarts %d", p.a.State(), p.b.State(), p.a.Stats.PeerRestarts)
	}
	last := p.la.resets[len(p.la.resets)-1]
	if len(p.la.resets) != 2 || last.tx != 100_000 || last.rx != 9 || p.lb.resets[0].rx != 100_000 {
		t.Fatalf("A resets %v, B resets %v", p.la.resets, p.lb.resets)
	}
	var all Event
	for _, e := range p.events[0] {
		all |= e
	}
	if all&(EvPeerRestart|EvReset|EvUp) != EvPeerRestart|EvReset|EvUp {
		t.Fatalf("A's events %v", p.events[0])
	}
}

// Hostile and stale input is counted and changes nothing.
func TestHostileHellos(t *testing.T) {
	ca, cb := cfgs()
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	a := p.a
	before, resets := a.Stats, len(p.la.resets)
	hello := func(h seqhdr.Hello) []byte {
		b := make([]byte, seqhdr.MinFrameLen)
		if _, err := seqhdr.PutHello(b, &ca.LocalMAC, &cb.LocalMAC, &h); err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := seqhdr.Hello{Epoch: 22, Echo: 11, InitSeq: seqhdr.Half + 77, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000}
	loop := good
	loop.Epoch = 11
	stale := good
	stale.Ack, stale.Epoch, stale.Echo = true, 44, 99 // a new epoch, but echoing an old one of ours
	incons := good
	incons.Window = 1
	noEcho := good
	noEcho.Ack, noEcho.Echo = true, 0
	foreign := hello(good)
	foreign[11] ^= 1
	for _, f := range [][]byte{{1, 2, 3}, make([]byte, 60), hello(loop), hello(stale), hello(incons), hello(noEcho), foreign} {
		if ev := a.Receive(p.now, f); ev != 0 {
			t.Fatalf("event %v from hostile input", ev)
		}
	}
	st := a.Stats
	if st.Malformed != before.Malformed+3 || st.Looped != before.Looped+1 || st.Stale != before.Stale+1 ||
		st.Inconsistent != before.Inconsistent+1 || st.Foreign != before.Foreign+1 || len(p.la.resets) != resets || a.State() != Up {
		t.Fatalf("stats %+v (before %+v), resets %d→%d, state %v", st, before, resets, len(p.la.resets), a.State())
	}
	if g, _ := a.Agreed(); g.PeerEpoch != 22 {
		t.Fatalf("agreement changed: %+v", g)
	}
}

// Incompatible protect modes: no reset, no Up, both report a mismatch.
func TestProtectMismatch(t *testing.T) {
	ca, cb := cfgs()
	cb.Offer.Protect = Protect{Tx: true} // B does not sequence what A sends
	p := newPair(t, ca, cb)
	p.run(2_000_000, 1000)
	if p.a.State() != Mismatch || p.b.State() != Mismatch || len(p.la.resets)+len(p.lb.resets) != 0 || p.a.Stats.Mismatches == 0 {
		t.Fatalf("states %v %v resets %v %v", p.a.State(), p.b.State(), p.la.resets, p.lb.resets)
	}
	if _, ok := p.a.Agreed(); ok || p.a.AcceptLink(p.now) || p.a.Admit(p.now, 0) == Send {
		t.Fatal("a mismatched session must not protect or accept link frames")
	}
}

// The policy before Up, and LinkGuardian frames from the peer while not Up
// bring the next HELLO forward.
func TestPolicyAndTrigger(t *testing.T) {
	ca, _ := cfgs()
	ca.Policy = Policy{WaitUpTo: 5000, PassUnprotected: true}
	ca.HelloInterval, ca.MaxHelloInterval = 1_000_000, 1_000_000_000
	s, _ := New(ca, &fakeLink{})
	if s.Admit(0, 0) != Wait || s.Admit(5000, 0) != Pass {
		t.Fatal("wait then pass")
	}
	s.cfg.Policy.PassUnprotected = false
	if s.Admit(5000, 0) != Drop {
		t.Fatal("wait then drop")
	}
	b := make([]byte, 64)
	s.Poll(0)
	if s.Frame(0, b) == 0 || s.Frame(0, b) != 0 {
		t.Fatal("one HELLO at start")
	}
	if d := s.Poll(10); d != ca.HelloInterval {
		t.Fatalf("next HELLO at %d", d)
	}
	// Backoff grows the interval; a peer's LG frame pulls the HELLO in.
	s.Poll(ca.HelloInterval)
	s.Frame(ca.HelloInterval, b)
	at := 2*ca.HelloInterval + 10
	if s.AcceptLink(at) {
		t.Fatal("accepted a link frame without an agreement")
	}
	if d := s.Poll(at); d != at || s.Frame(at, b) == 0 {
		t.Fatalf("HELLO not brought forward: deadline %d", d)
	}
	if s.Stats.RxNotAgreed != 1 || s.Stats.HellosTx != 3 {
		t.Fatalf("%+v", s.Stats)
	}
}

// Host frames wait WaitUpTo for a session never agreed, and HoldUpTo once
// an agreement stands: with the link down, and with the peer silent.
func TestHoldWhileAgreed(t *testing.T) {
	ca, cb := cfgs()
	ca.Policy = Policy{WaitUpTo: 200_000, HoldUpTo: 5_000_000}
	p := newPair(t, ca, cb)
	if p.a.Admit(199_999, 0) != Wait || p.a.Admit(200_000, 0) != Drop || p.a.WaitDeadline(0) != 200_000 {
		t.Fatal("before any agreement frames must wait WaitUpTo, then follow the policy")
	}
	p.run(1_000_000, 1000)
	if p.a.State() != Up {
		t.Fatalf("state %v", p.a.State())
	}
	p.a.LinkDown(p.now)
	q := p.now
	if p.a.Admit(q+4_999_999, q) != Wait || p.a.Admit(q+5_000_000, q) != Drop || p.a.WaitDeadline(q) != q+5_000_000 {
		t.Fatal("with the link down and an agreement standing, frames must wait HoldUpTo")
	}
	p.a.LinkUp(p.now)
	p.run(1_000_000, 1000)
	// The peer falls silent: the session leaves Up, the agreement stands.
	p.drop = func(int, []byte) bool { return true }
	p.run(2*p.a.DeadAfter(), 1000)
	if p.a.State() == Up || p.a.Stats.PeerTimeouts == 0 {
		t.Fatalf("state %v after the peer fell silent; stats %+v", p.a.State(), p.a.Stats)
	}
	if q := p.now; p.a.Admit(q+4_000_000, q) != Wait {
		t.Fatal("with the peer silent and an agreement standing, frames must wait HoldUpTo")
	}
	// A HoldUpTo shorter than WaitUpTo never shortens the wait.
	p.a.cfg.Policy.HoldUpTo = 1
	if q := p.now; p.a.Admit(q+199_999, q) != Wait {
		t.Fatal("HoldUpTo shortened WaitUpTo")
	}
}

// LinkDown stops HELLOs; LinkUp re-confirms the agreement without a reset.
func TestLinkDownUp(t *testing.T) {
	ca, cb := cfgs()
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	p.a.LinkDown(p.now)
	if p.a.Poll(p.now) != maxTime || p.a.Frame(p.now, make([]byte, 64)) != 0 {
		t.Fatal("down session sends")
	}
	p.a.LinkUp(p.now)
	p.run(1_000_000, 1000)
	if p.a.State() != Up || len(p.la.resets) != 1 || len(p.lb.resets) != 1 {
		t.Fatalf("state %v resets %v %v", p.a.State(), p.la.resets, p.lb.resets)
	}
}

// The per-frame and per-iteration calls do not allocate.
func TestNoAllocation(t *testing.T) {
	ca, cb := cfgs()
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	h := seqhdr.Hello{Epoch: 22, Echo: 11, InitSeq: seqhdr.Half + 77, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000}
	in := make([]byte, seqhdr.MinFrameLen)
	seqhdr.PutHello(in, &ca.LocalMAC, &cb.LocalMAC, &h)
	out := make([]byte, seqhdr.MinFrameLen)
	s := p.a
	now := p.now
	if n := testing.AllocsPerRun(100, func() {
		now++
		s.Receive(now, in)
		s.AcceptLink(now)
		s.Admit(now, now)
		s.Poll(now)
		for s.Frame(now, out) > 0 {
		}
	}); n != 0 {
		t.Fatalf("%v allocations per iteration", n)
	}
	if s.State() != Up || s.Stats.HelloAcksTx == 0 {
		t.Fatalf("state %v stats %+v", s.State(), s.Stats)
	}
}

// An Up session sends keepalives that the peer answers; a peer silent for
// DeadAfter takes the session out of Up (host frames then follow the
// policy), and the same peer heard again brings it back without a reset.
// LinkGuardian frames from the peer count as heard.
func TestKeepaliveAndDeadPeer(t *testing.T) {
	ca, cb := cfgs()
	ca.KeepaliveInterval, ca.DeadAfter = 2_000_000, 10_000_000
	cb.KeepaliveInterval, cb.DeadAfter = 2_000_000, 10_000_000
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	hellos := p.a.Stats.HellosTx
	p.run(40_000_000, 1000)
	if p.a.State() != Up || p.b.State() != Up || p.a.Stats.PeerTimeouts != 0 {
		t.Fatalf("idle link: states %v %v, timeouts %d", p.a.State(), p.b.State(), p.a.Stats.PeerTimeouts)
	}
	if k := p.a.Stats.HellosTx - hellos; k < 15 || k > 25 || p.b.Stats.HelloAcksTx < 15 {
		t.Fatalf("40 ms at a 2 ms keepalive: A sent %d HELLOs, B answered %d", k, p.b.Stats.HelloAcksTx)
	}

	// B falls silent (its frames are lost): A leaves Up within DeadAfter.
	silent := p.now
	p.drop = func(dir int, f []byte) bool { return dir == 1 }
	for p.a.State() == Up && p.now-silent < 30_000_000 {
		p.run(100_000, 1000)
	}
	if p.a.State() != HelloSent || p.a.Stats.PeerTimeouts != 1 {
		t.Fatalf("silent peer: state %v, timeouts %d", p.a.State(), p.a.Stats.PeerTimeouts)
	}
	if d := p.now - silent; d > ca.DeadAfter+ca.KeepaliveInterval+2*p.delay {
		t.Fatalf("silent peer noticed after %d ns, DeadAfter %d", d, ca.DeadAfter)
	}
	if v := p.a.Admit(p.now, p.now-ca.Policy.WaitUpTo-1); v != Drop {
		t.Fatalf("host frame past the wait with the peer dead: %v, want Drop", v)
	}

	// B heard again: Up without a reset on either side.
	p.drop = nil
	p.run(5*ca.MaxHelloInterval, 1000)
	if p.a.State() != Up || len(p.la.resets) != 1 || len(p.lb.resets) != 1 {
		t.Fatalf("peer back: state %v, resets %v %v", p.a.State(), p.la.resets, p.lb.resets)
	}

	// Session frames lost but LinkGuardian frames arriving: still Up.
	p.drop = func(dir int, f []byte) bool { return dir == 1 }
	for range 30 {
		p.run(1_000_000, 1000)
		p.a.AcceptLink(p.now)
	}
	if p.a.State() != Up || p.a.Stats.PeerTimeouts != 1 {
		t.Fatalf("LinkGuardian frames flowing: state %v, timeouts %d", p.a.State(), p.a.Stats.PeerTimeouts)
	}
}

// Cell node ids: different ids agree and each end learns the other's; the
// same id on both ends is refused at both, every time, and the link is
// never reset or accepted.
func TestNodeIDs(t *testing.T) {
	ca, cb := cfgs()
	ca.Node, cb.Node = 3, 4
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	ga, _ := p.a.Agreed()
	gb, _ := p.b.Agreed()
	if p.a.State() != Up || p.b.State() != Up || ga.PeerNode != 4 || gb.PeerNode != 3 {
		t.Fatalf("distinct ids: states %v %v, peer nodes %d %d", p.a.State(), p.b.State(), ga.PeerNode, gb.PeerNode)
	}
	cb.Node = 3
	p = newPair(t, ca, cb)
	p.run(2_000_000, 1000)
	if p.a.State() == Up || p.b.State() == Up || len(p.la.resets)+len(p.lb.resets) != 0 {
		t.Fatalf("one id on both ends: states %v %v, resets %v %v", p.a.State(), p.b.State(), p.la.resets, p.lb.resets)
	}
	if p.a.Stats.NodeCollisions == 0 || p.b.Stats.NodeCollisions == 0 || p.a.AcceptLink(p.now) {
		t.Fatalf("collisions %d %d; a accepts link frames %v", p.a.Stats.NodeCollisions, p.b.Stats.NodeCollisions, p.a.AcceptLink(p.now))
	}
	found := false
	for _, ev := range p.events[0] {
		found = found || ev&EvNodeCollision != 0
	}
	if !found {
		t.Error("no EvNodeCollision reported")
	}
	// A link that is not a cell link (id 0) never collides.
	ca.Node, cb.Node = 0, 0
	p = newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	if p.a.State() != Up || p.a.Stats.NodeCollisions != 0 {
		t.Fatalf("ids 0: state %v, collisions %d", p.a.State(), p.a.Stats.NodeCollisions)
	}
}

// An end that codes (FEC) and one that retransmits never agree; two FEC
// ends do, and each gets the other's latest report through the keepalives,
// however often it changes (a report is not part of the agreement).
func TestFECProtectAndReport(t *testing.T) {
	ca, cb := cfgs()
	ca.Offer.Protect.FEC = true
	ca.KeepaliveInterval = 1_000_000
	p := newPair(t, ca, cb)
	p.run(2_000_000, 1000)
	if p.a.State() != Mismatch || p.b.State() != Mismatch || len(p.la.resets)+len(p.lb.resets) != 0 {
		t.Fatalf("fec against lg: states %v %v resets %v %v", p.a.State(), p.b.State(), p.la.resets, p.lb.resets)
	}
	cb.Offer.Protect.FEC = true
	cb.KeepaliveInterval = 1_000_000
	p = newPair(t, ca, cb)
	if _, ok := p.b.PeerReport(); ok {
		t.Fatal("a report before any came")
	}
	for i, r := range []seqhdr.Report{{RxLoss: seqhdr.RxLossUnknown, TxN: 4, TxCopies: 1}, {RxLoss: 3_000_000, RxBurst: 260, TxN: 14, TxCopies: 1}} {
		p.a.SetReport(r)
		p.run(3_000_000, 1000)
		got, ok := p.b.PeerReport()
		if p.a.State() != Up || p.b.State() != Up || !ok || got != r {
			t.Fatalf("report %d: states %v %v, b has %+v (%v), want %+v", i, p.a.State(), p.b.State(), got, ok, r)
		}
	}
	if _, ok := p.a.PeerReport(); ok || p.b.Stats.Inconsistent != 0 || len(p.lb.resets) != 1 {
		t.Fatalf("b sent no report, yet a has one; or a changed report was taken for another offer: %+v resets %v", p.b.Stats, p.lb.resets)
	}
}

// Accepts is a query: asked on every iteration (the worker's condition for
// handing the receive point to the kernel) while the peer is silent, it
// does not count as hearing the peer, so the session still leaves Up
// within DeadAfter; and it answers as AcceptLink would, without counting.
func TestAcceptsIsAQuery(t *testing.T) {
	ca, cb := cfgs()
	ca.KeepaliveInterval, ca.DeadAfter = 2_000_000, 10_000_000
	cb.KeepaliveInterval, cb.DeadAfter = 2_000_000, 10_000_000
	p := newPair(t, ca, cb)
	if p.a.Accepts() {
		t.Fatal("no agreement yet, but Accepts")
	}
	p.run(1_000_000, 1000)
	if p.a.State() != Up || !p.a.Accepts() {
		t.Fatalf("state %v, accepts %v", p.a.State(), p.a.Accepts())
	}
	silent := p.now
	p.drop = func(dir int, f []byte) bool { return dir == 1 }
	for p.a.State() == Up && p.now-silent < 30_000_000 {
		p.run(1000, 1000)
		if !p.a.Accepts() {
			t.Fatal("the agreement stands, but not Accepts")
		}
	}
	if p.a.State() != HelloSent || p.a.Stats.PeerTimeouts != 1 {
		t.Fatalf("silent peer asked about every µs: state %v, timeouts %d", p.a.State(), p.a.Stats.PeerTimeouts)
	}
	if d := p.now - silent; d > ca.DeadAfter+ca.KeepaliveInterval+2*p.delay {
		t.Fatalf("silent peer noticed after %d ns, DeadAfter %d", d, ca.DeadAfter)
	}
	if p.a.Stats.RxNotAgreed != 0 {
		t.Fatalf("Accepts counted %d frames", p.a.Stats.RxNotAgreed)
	}
}

// countEv counts the events of side dir that have all bits of want.
func (p *pair) countEv(dir int, want Event) int {
	n := 0
	for _, e := range p.events[dir] {
		if e&want == want {
			n++
		}
	}
	return n
}

// anyMACPair is an Up pair whose sessions take control frames from any
// source MAC (Config.PeerMAC unset), with 1 ms keepalives.
func anyMACPair(t *testing.T) (*pair, Config, Config) {
	t.Helper()
	ca, cb := cfgs()
	ca.PeerMAC, cb.PeerMAC = [6]byte{}, [6]byte{}
	ca.KeepaliveInterval, cb.KeepaliveInterval = 1_000_000, 1_000_000
	p := newPair(t, ca, cb)
	p.run(1_000_000, 1000)
	if p.a.State() != Up || len(p.la.resets) != 1 || len(p.lb.resets) != 1 {
		t.Fatalf("states %v %v resets %v %v", p.a.State(), p.b.State(), p.la.resets, p.lb.resets)
	}
	return p, ca, cb
}

// hello encodes h as a frame from src to a.
func hello(t *testing.T, a Config, src [6]byte, h seqhdr.Hello) []byte {
	t.Helper()
	b := make([]byte, seqhdr.MinFrameLen)
	if _, err := seqhdr.PutHello(b, &a.LocalMAC, &src, &h); err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	otherMAC = [6]byte{2, 0, 0, 0, 0, 0xC}
	stranger = seqhdr.Hello{Epoch: 99, InitSeq: 4242, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000}
)

// A HELLO of a new epoch from another source MAC (a second sender; any
// MAC reaches the session with Config.PeerMAC unset) while the peer is
// alive is Foreign: it resets nothing, and neither does the real peer's
// next keepalive.
func TestForeignEpochWhilePeerAlive(t *testing.T) {
	p, ca, cb := anyMACPair(t)
	foreign := p.a.Stats.Foreign
	p.events[0] = []Event{p.a.Receive(p.now, hello(t, ca, otherMAC, stranger))}
	p.run(5_000_000, 1000) // keepalives both ways
	if p.a.State() != Up || len(p.la.resets) != 1 || len(p.lb.resets) != 1 || p.countEv(0, EvReset) != 0 || p.a.Stats.Foreign != foreign+1 {
		t.Fatalf("after a stranger's HELLO and the peer's keepalives: state %v, resets A %v B %v, A's events %v, foreign %d",
			p.a.State(), p.la.resets, p.lb.resets, p.events[0], p.a.Stats.Foreign)
	}
	if g, _ := p.a.Agreed(); g.PeerEpoch != cb.Epoch {
		t.Fatalf("agreement changed: %+v", g)
	}
}

// The peer restarts (a new epoch, the same MAC) while still taken for
// alive: adopted at once, one reset. A late message of the epoch it
// replaced (it echoes us) is Stale and resets nothing.
func TestRestartThenReplacedEpochIsStale(t *testing.T) {
	p, ca, cb := anyMACPair(t)
	old := hello(t, ca, cb.LocalMAC, seqhdr.Hello{Epoch: cb.Epoch, Echo: ca.Epoch, InitSeq: cb.InitSeq, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000})
	cb.Epoch, cb.InitSeq = 33, 9
	p.lb = &fakeLink{}
	p.b, _ = New(cb, p.lb)
	p.events[0] = nil
	p.run(2_000_000, 1000)
	if p.a.State() != Up || p.b.State() != Up || len(p.la.resets) != 2 || p.countEv(0, EvReset|EvPeerRestart) != 1 {
		t.Fatalf("restart: states %v %v, A's resets %v, events %v", p.a.State(), p.b.State(), p.la.resets, p.events[0])
	}
	stale := p.a.Stats.Stale
	p.events[0] = []Event{p.a.Receive(p.now, old)}
	p.run(3_000_000, 1000)
	if len(p.la.resets) != 2 || len(p.lb.resets) != 1 || p.countEv(0, EvReset) != 0 || p.a.Stats.Stale != stale+1 {
		t.Fatalf("after the replaced epoch's message: resets A %v B %v, A's events %v, stale %d (was %d)",
			p.la.resets, p.lb.resets, p.events[0], p.a.Stats.Stale, stale)
	}
}

// With the peer dead, a new epoch from another MAC is adopted: the link is
// not held for a peer that may never come back.
func TestNewPeerAfterDeath(t *testing.T) {
	p, ca, _ := anyMACPair(t)
	p.drop = func(dir int, f []byte) bool { return dir == 1 }
	p.run(2*p.a.DeadAfter(), 1000)
	if p.a.State() == Up {
		t.Fatal("the silent peer is still Up")
	}
	if ev := p.a.Receive(p.now, hello(t, ca, otherMAC, stranger)); ev&EvReset == 0 {
		t.Fatalf("a new peer after the old one died: %v", ev)
	}
}

// Different integrity checks: both ends in Mismatch naming integrity, with
// both settings in Agreed; nothing reset, accepted or protected. A peer
// restarted with the same check then agrees.
func TestIntegrityMismatch(t *testing.T) {
	ca, cb := cfgs()
	ca.Offer.Integrity, cb.Offer.Integrity = linkcrc.Csum, linkcrc.CRC32C
	ca.Offer.FastSend = true
	p := newPair(t, ca, cb)
	p.run(2_000_000, 1000)
	for i, s := range []*Session{p.a, p.b} {
		a, ok := s.Agreed()
		if s.State() != Mismatch || ok || a.Conflict != ConflictIntegrity || a.Conflict.String() != "integrity" || s.Stats.Mismatches == 0 {
			t.Fatalf("end %d: state %v, agreed %v, conflict %q, stats %+v", i, s.State(), ok, a.Conflict, s.Stats)
		}
		if s.Accepts() || s.AcceptLink(p.now) || s.Admit(p.now, p.now) == Send {
			t.Fatalf("end %d: a mismatched session must not accept link frames or protect host frames", i)
		}
	}
	if len(p.la.resets)+len(p.lb.resets) != 0 || p.countEv(0, EvMismatch) == 0 || p.countEv(0, EvReset) != 0 {
		t.Fatalf("resets %v %v, A's events %v", p.la.resets, p.lb.resets, p.events[0])
	}
	a, _ := p.a.Agreed()
	b, _ := p.b.Agreed()
	if a.LocalCaps != (Caps{true, linkcrc.Csum, true}) || a.PeerCaps != (Caps{true, linkcrc.CRC32C, false}) ||
		b.LocalCaps != a.PeerCaps || b.PeerCaps != a.LocalCaps {
		t.Fatalf("caps: A %+v/%+v, B %+v/%+v", a.LocalCaps, a.PeerCaps, b.LocalCaps, b.PeerCaps)
	}
	// The HELLOs go on at the slowest pace.
	hellos := p.a.Stats.HellosTx
	p.run(10*ca.MaxHelloInterval, 1000)
	if n := p.a.Stats.HellosTx - hellos; n > 11 {
		t.Fatalf("%d HELLOs in 10 MaxHelloIntervals while mismatched", n)
	}

	// B restarts with A's check: agreed, reset, Up; FastSend differs and
	// is only reported.
	cb.Epoch, cb.Offer.Integrity = 33, linkcrc.Csum
	p.lb = &fakeLink{}
	p.b, _ = New(cb, p.lb)
	p.run(2_000_000, 1000)
	a, ok := p.a.Agreed()
	if p.a.State() != Up || p.b.State() != Up || !ok || a.Conflict != 0 || len(p.la.resets) != 1 || a.PeerCaps.FastSend || !a.LocalCaps.FastSend {
		t.Fatalf("after B's restart with csum: states %v %v, agreed %+v %v, A's resets %v", p.a.State(), p.b.State(), a, ok, p.la.resets)
	}
}

// A peer that does not say its integrity check (Caps zero: a build from
// before) is not checked; both conflicts at once are both named.
func TestIntegrityUnknownAndBoth(t *testing.T) {
	ca, cb := cfgs()
	ca.Offer.Integrity = linkcrc.Off
	s, err := New(ca, &fakeLink{})
	if err != nil {
		t.Fatal(err)
	}
	old := seqhdr.Hello{Epoch: 22, InitSeq: 5, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000}
	if ev := s.Receive(0, hello(t, ca, cb.LocalMAC, old)); ev&EvReset == 0 {
		t.Fatalf("a peer without Caps: %v", ev)
	}
	if a, ok := s.Agreed(); !ok || a.PeerCaps.Known || a.Conflict != 0 {
		t.Fatalf("a peer without Caps: %+v %v", a, ok)
	}
	s, _ = New(ca, &fakeLink{})
	both := old
	both.Protect, both.Caps = seqhdr.ProtectTx, seqhdr.CapsSet|uint8(linkcrc.CRC32C)
	if ev := s.Receive(0, hello(t, ca, cb.LocalMAC, both)); ev&EvMismatch == 0 || s.State() != Mismatch {
		t.Fatalf("both conflicts: %v, state %v", ev, s.State())
	}
	if a, _ := s.Agreed(); a.Conflict != ConflictProtect|ConflictIntegrity || a.Conflict.String() != "protect, integrity" {
		t.Fatalf("both conflicts: %q", a.Conflict)
	}
	// Down and up again: still Mismatch, still nothing accepted.
	s.LinkDown(1)
	if s.Accepts() {
		t.Fatal("a mismatched peer accepted with the link down")
	}
	s.LinkUp(2)
	if s.State() != Mismatch {
		t.Fatalf("after LinkUp: %v", s.State())
	}
}

// A mismatch adopted from a corrupted first HELLO (its Caps flipped to
// another integrity check, which the peer's own check cannot catch when
// this end's frame passed as that other mode's) does not stick: the
// epoch's later, correct offer is adopted and agrees. Once agreed, an
// inconsistent offer changes nothing.
func TestMismatchFromCorruptOfferHeals(t *testing.T) {
	ca, cb := cfgs()
	s, err := New(ca, &fakeLink{})
	if err != nil {
		t.Fatal(err)
	}
	good := seqhdr.Hello{Epoch: 22, InitSeq: 5, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000, Caps: seqhdr.CapsSet | uint8(linkcrc.CRC32C)}
	flipped := good
	flipped.Caps = seqhdr.CapsSet | uint8(linkcrc.Off)
	if ev := s.Receive(0, hello(t, ca, cb.LocalMAC, flipped)); ev&EvMismatch == 0 || s.State() != Mismatch {
		t.Fatalf("flipped offer: %v, %v", ev, s.State())
	}
	if ev := s.Receive(1, hello(t, ca, cb.LocalMAC, good)); ev&EvReset == 0 || ev&EvPeerRestart != 0 || s.State() != HelloSent || s.Stats.PeerRestarts != 0 {
		t.Fatalf("the correct offer: %v, %v, %+v", ev, s.State(), s.Stats)
	}
	if a, ok := s.Agreed(); !ok || a.Conflict != 0 {
		t.Fatalf("agreed %+v %v", a, ok)
	}
	if ev := s.Receive(2, hello(t, ca, cb.LocalMAC, flipped)); ev != 0 || s.State() != HelloSent || s.Stats.Inconsistent != 2 {
		t.Fatalf("a flipped offer after agreeing: %v, %v, %+v", ev, s.State(), s.Stats)
	}
}

// AcceptPlain: frames without a link header are refused only while the
// peer runs another integrity check.
func TestAcceptPlain(t *testing.T) {
	ca, cb := cfgs()
	s, _ := New(ca, &fakeLink{})
	if !s.AcceptPlain() {
		t.Fatal("no peer yet: refused")
	}
	h := seqhdr.Hello{Epoch: 22, InitSeq: 5, Window: 4096, Lanes: 2, Protect: seqhdr.ProtectTx, MTU: 1500, Speed: 10000, Caps: seqhdr.CapsSet}
	s.Receive(0, hello(t, ca, cb.LocalMAC, h))
	if s.State() != Mismatch || !s.AcceptPlain() {
		t.Fatalf("a protect mismatch: %v, plain frames refused", s.State())
	}
	s, _ = New(ca, &fakeLink{})
	h.Protect, h.Caps = 3, seqhdr.CapsSet|uint8(linkcrc.Csum)
	s.Receive(0, hello(t, ca, cb.LocalMAC, h))
	if s.State() != Mismatch || s.AcceptPlain() || s.Stats.RxNotAgreed != 1 {
		t.Fatalf("an integrity mismatch: %v, plain frames accepted, %+v", s.State(), s.Stats)
	}
}
