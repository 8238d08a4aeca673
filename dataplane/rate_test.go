package dataplane

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// TestPortRateTCP: forward mode on the pair, sw2's host port limited to
// 200 Mbit/s: iperf3 h1→h2 gets that rate (less the TCP/IP/Ethernet headers
// and the wire overhead) within 10%, the port's counters send it on the
// wire within 10%, and TCP filled the egress queue.
func TestPortRateTCP(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
	tb := netns.TestUp(t, "lfn", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	const rate = 200e6
	startSwitch(t, tb.NS("sw1"), Config{})
	sw2 := startSwitch(t, tb.NS("sw2"), Config{Shape: map[string]PortShape{"host0": {Rate: rate}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2: %v", err)
	}
	srv := netns.Command(ctx, tb.NS("h2"), "iperf3", "-s", "-1", "-p", "5298")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	// The wire rate of host0 while TCP runs: from 1 s to 3.5 s of 4.
	wireRate := make(chan float64, 1)
	go func() {
		time.Sleep(time.Second)
		a, t0 := sw2.Stats().Host.TX, time.Now()
		time.Sleep(2500 * time.Millisecond)
		b := sw2.Stats().Host.TX
		wireRate <- float64((b.Bytes-a.Bytes)+WireOverhead*(b.Frames-a.Frames)) * 8 / time.Since(t0).Seconds()
	}()
	out, err := netns.Command(ctx, tb.NS("h1"), "iperf3", "-c", "10.0.0.2", "-p", "5298", "-t", "4", "-J", "--connect-timeout", "3000").Output()
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	after := sw2.Stats()
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("iperf3 -J: %v\n%s", err, out)
	}
	// A full-size frame: 1448 bytes of data in 1514 (TCP timestamps), plus
	// WireOverhead on the wire.
	goodput, want := res.End.SumReceived.BitsPerSecond, rate*1448/(1514+WireOverhead)
	wire := <-wireRate
	tx, e := after.Host.TX, after.Host.Egress
	if e == nil {
		t.Fatal("host0 has a rate limit, yet no egress counters")
	}
	t.Logf("iperf3 %.1f Mbit/s (want %.1f); host0 on the wire %.1f Mbit/s; egress %+v", goodput/1e6, want/1e6, wire/1e6, *e)
	if math.Abs(goodput-want) > 0.1*want {
		t.Errorf("iperf3 through a 200 Mbit/s port: %.1f Mbit/s; want %.1f ±10%%", goodput/1e6, want/1e6)
	}
	if math.Abs(wire-rate) > 0.1*rate {
		t.Errorf("host0 sent %.1f Mbit/s on the wire; want %.0f ±10%%", wire/1e6, rate/1e6)
	}
	// TCP filled the queue (a sender faster than 200 Mbit/s); what it lost
	// there is counted in both places.
	if e.Rate != rate || e.PeakBytes < uint64(e.Buffer)/2 || e.Dropped != tx.Dropped || e.DroppedBytes < e.Dropped*64 {
		t.Errorf("egress counters %+v (TX dropped %d): want the queue filled by TCP, its drops counted in both", e, tx.Dropped)
	}
	if s := after.Link; s.Egress != nil {
		t.Errorf("link0 has no rate limit, yet egress counters %+v", s.Egress)
	}
}
