package linksession

import (
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// FuzzReceive: any sequence of frames (split from the input) into an Up
// session never panics, never resets the link for a frame that is not a
// decodable session frame, and leaves State/Agreed consistent.
func FuzzReceive(f *testing.F) {
	ca, _ := cfgs()
	h := seqhdr.Hello{Epoch: 22, Echo: 11, InitSeq: 5, Window: 4096, Lanes: 2, Protect: 3, MTU: 1500, Speed: 10000}
	b := make([]byte, seqhdr.MinFrameLen)
	seqhdr.PutHello(b, &ca.LocalMAC, &ca.PeerMAC, &h)
	f.Add(b)
	h.Ack, h.Epoch = true, 23
	seqhdr.PutHello(b, &ca.LocalMAC, &ca.PeerMAC, &h)
	f.Add(append(append([]byte(nil), b...), b...))
	h.Ack, h.Epoch, h.Caps = false, 24, seqhdr.CapsSet|2 // another integrity check
	seqhdr.PutHello(b, &ca.LocalMAC, &ca.PeerMAC, &h)
	f.Add(b)
	f.Add([]byte{0x88, 0xb5, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		l := &fakeLink{}
		s, err := New(ca, l)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, seqhdr.MinFrameLen)
		for now := int64(0); len(in) > 0; now += 1000 {
			n := min(len(in), seqhdr.MinFrameLen)
			frame := in[:n]
			in = in[n:]
			resets := len(l.resets)
			ev := s.Receive(now, frame)
			if _, err := seqhdr.ParseHello(frame); err != nil && (ev != 0 || len(l.resets) != resets) {
				t.Fatalf("undecodable frame caused %v", ev)
			}
			if s.Accepts() != s.AcceptLink(now) {
				t.Fatal("Accepts and AcceptLink disagree")
			}
			if g, _ := s.Agreed(); s.AcceptPlain() != (g.PeerEpoch == 0 || g.Conflict&ConflictIntegrity == 0) {
				t.Fatalf("AcceptPlain with conflict %v", g.Conflict)
			}
			if g, ok := s.Agreed(); (s.State() == Mismatch) != (g.PeerEpoch != 0 && g.Conflict != 0 && s.State() != Down) || ok == (g.Conflict != 0) && g.PeerEpoch != 0 {
				t.Fatalf("state %v with agreement %+v %v", s.State(), g, ok)
			}
			s.Poll(now)
			for s.Frame(now, buf) > 0 {
				if _, err := seqhdr.ParseHello(buf); err != nil {
					t.Fatalf("session sent an undecodable frame: %v", err)
				}
			}
			if g, ok := s.Agreed(); ok && (g.Window > ca.Offer.Window || g.PeerEpoch == 0 || g.PeerEpoch == s.Epoch()) {
				t.Fatalf("agreement %+v", g)
			}
		}
	})
}
