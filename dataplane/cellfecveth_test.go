package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// cellsGrayRun is one arm of TestCellsFECGrayUDP: what iperf3 counted and
// both edges' statistics.
type cellsGrayRun struct {
	packets, lost uint64
	busy          uint64 // datagrams dropped outside the links
	dropped       uint64 // by the impairment, on the 4 links
	s1, s2        cellspipe.Snapshot
}

// cellsGray brings up the bundle (prefix lfcf) with mode under the cells on
// both edges (fc configures fec), Bernoulli loss p on every link sw1→sw2,
// and runs iperf3 UDP h1→h2 through it.
func cellsGray(t *testing.T, mode string, fc fecpipe.Config, p float64) cellsGrayRun {
	tb := netns.TestUp(t, "lfcf", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	workers(t, 2)
	cc := cellspipe.Config{LinkMode: mode, ReasmTimeout: 100 * time.Millisecond}
	node := func(id uint16) dataplane.Config {
		c := cc
		c.NodeID = id
		return dataplane.WithMech(dataplane.WithMech(dataplane.Config{Mode: cellspipe.ModeCells, HostPorts: []string{"host0"}, LinkPorts: bundleLinks}, "cells", c), "fec", fc)
	}
	rs1, rs2 := dataplane.StartBoth(t, tb.NS("sw1"), node(1), tb.NS("sw2"), node(2))
	sw1, sw2 := rs1.D, rs2.D
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through cells over %s: %v", mode, err)
	}
	for l := range bundleLinks {
		if err := sw2.Port(sw2.Ports().Links[l]).Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: p, Seed: uint64(41 + l)}); err != nil {
			t.Fatal(err)
		}
	}
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	// sw2's link sockets drop cells after the impairment: the links' loss
	// as the link layer sees it (fec rebuilds them), logged, not counted
	// outside the links.
	linkSockets := func() (n uint64) {
		for _, port := range sw2.Ports().Links {
			n += socketDrops(t, sw2.Port(port))
		}
		return n
	}
	before, queued, links := endDrops(t, tb, sw1, sw2), cellsSnap(t, sw2).Hosts[0].QueueDrops, linkSockets()
	snd := dataplane.SNMPFields(t, h1, "Udp", "SndbufErrors")["SndbufErrors"]
	var r cellsGrayRun
	r.packets, r.lost, _ = dataplane.IperfUDP(t, h1, h2, dataplane.UDPRun{Port: 5321, Rate: "50M", Secs: 3})
	var where string
	r.busy, where = outsideLink(before, endDrops(t, tb, sw1, sw2))
	links = linkSockets() - links
	for _, port := range sw2.Ports().Links {
		st, err := sw2.Port(port).Program().ImpairStats()
		if err != nil {
			t.Fatal(err)
		}
		r.dropped += st.Dropped
	}
	time.Sleep(200 * time.Millisecond) // a loss observation every 20 ms
	r.s1, r.s2 = cellsSnap(t, sw1), cellsSnap(t, sw2)
	queued = r.s2.Hosts[0].QueueDrops - queued
	r.busy += queued
	snd = dataplane.SNMPFields(t, h1, "Udp", "SndbufErrors")["SndbufErrors"] - snd
	t.Logf("--cells-link-mode %s, loss %g on the 4 links sw1→sw2: iperf3 UDP 50 Mbit/s 3 s: %d datagrams, %d lost; %d dropped outside the links (machine busy: %s, sw2 host queue %d); h1's UDP SndbufErrors %d; sw2's link sockets dropped %d cells, the impairment %d",
		mode, p, r.packets, r.lost, r.busy, where, queued, snd, links, r.dropped)
	t.Logf("sw2: usable links %d, reassembly skipped %d holes, discarded %d records, malformed %d", r.s2.UsableLinks, r.s2.ReasmTimeouts, r.s2.ReasmDiscards, r.s2.Malformed)
	for _, s := range []cellspipe.Snapshot{r.s1, r.s2} {
		if s.FramesHeld != 0 || s.CopyFails != 0 {
			t.Errorf("node %d: %d frames unaccounted for, %d copy failures", s.NodeID, s.FramesHeld, s.CopyFails)
		}
	}
	if r.dropped == 0 {
		t.Fatal("the impairment dropped nothing: the run proves nothing")
	}
	return r
}

// TestCellsFECGrayUDP: the bundle's 4 links all gray (Bernoulli loss 1e-2
// sw1→sw2). UDP through the cells loses far fewer datagrams with
// --cells-link-mode fec than with none: each link's receiver rebuilds the cells
// lost, one per group; n comes from the policy on the loss sw2 measures
// (1e-2: reported to sw1 in the link session), the measured raw loss is
// each link's loss rate at sw2's node, and the links stay in use.
func TestCellsFECGrayUDP(t *testing.T) {
	const p = 1e-2
	var none, coded cellsGrayRun
	t.Run("none", func(t *testing.T) { none = cellsGray(t, "none", fecpipe.Config{}, p) })
	t.Run("fec", func(t *testing.T) {
		coded = cellsGray(t, "fec", fecpipe.Config{Window: time.Second, MinFrames: 500}, p)
		var sent, parity, recovered, lostSeen, unrecovered uint64
		for l, ln := range coded.s2.Links {
			g := ln.LG
			if g == nil || g.FEC == nil {
				t.Fatalf("sw2 %s: no fec link layer", ln.Name)
			}
			gf := g.FEC.(*fecpipe.Snapshot)
			s1 := coded.s1.Links[l].LG
			sf, _ := s1.FEC.(*fecpipe.Snapshot)
			t.Logf("%s: sw1 sent %d cells, %d parity, n %d (%s, policy %q); sw2 found %d missing, rebuilt %d, lost %d; measured loss %.4f",
				ln.Name, s1.Sent, sf.Sender.Parity, sf.N, sf.Basis, sf.Policy.Decision, g.LostSeen, g.Recovered, g.GaveUp, g.LossRate)
			sent += s1.Sent
			parity += sf.Sender.Parity
			recovered += g.Recovered
			lostSeen += g.LostSeen
			unrecovered += g.GaveUp
			if g.LossRate < p/3 || g.LossRate > 3*p || !gf.RxMeasured {
				t.Errorf("sw2 %s: measured loss %.4g (measured %v); the links lose %g", ln.Name, g.LossRate, gf.RxMeasured, p)
			}
			if sf.Policy.Decision == "" || sf.N < 1 {
				t.Errorf("sw1 %s: policy %+v, n %d: want n from sw2's report", ln.Name, sf.Policy, sf.N)
			}
			if !ln.Usable {
				t.Errorf("sw2 %s not usable (last exclusion %q): a link the coding carries stays in use", ln.Name, ln.LastReason)
			}
		}
		t.Logf("fec: %d cells, %d parity frames; sw2 found %d missing, rebuilt %d, %d lost", sent, parity, lostSeen, recovered, unrecovered)
		if recovered == 0 || recovered < lostSeen*7/10 {
			t.Errorf("sw2 rebuilt %d of %d cells missing", recovered, lostSeen)
		}
	})
	if t.Failed() || none.packets == 0 || coded.packets == 0 {
		return
	}
	// A datagram dropped outside the links (a socket or ring at either
	// end, sw2's host queue: the machine busy) is not one the links lost,
	// and how many there are differs from run to run: the links' share is
	// what is left (the reassembly's discards show it too).
	ln, lf := none.lost-min(none.busy, none.lost), coded.lost-min(coded.busy, coded.lost)
	t.Logf("datagrams lost at loss %g on every link, less those dropped outside the links: --cells-link-mode none %d of %d (%.3g; reassembly discarded %d records), fec %d of %d (%.3g; discarded %d)",
		p, ln, none.packets, float64(ln)/float64(none.packets), none.s2.ReasmDiscards, lf, coded.packets, float64(lf)/float64(coded.packets), coded.s2.ReasmDiscards)
	if none.s2.ReasmDiscards == 0 || lf*5 > ln || coded.s2.ReasmDiscards*5 > none.s2.ReasmDiscards {
		t.Errorf("datagrams the links lost: none %d, fec %d (records discarded: none %d, fec %d); want fec's far fewer (a fifth at most)",
			ln, lf, none.s2.ReasmDiscards, coded.s2.ReasmDiscards)
	}
}
