package main_test

// `run --workers N` as a user meets it: refused with too few queues (naming
// the port and the fix) and with --fastpath xdp; with 2 workers on a pair
// testbed whose veths have 2 queues, lg comes up per lane, and /stats.json
// shows each worker's share (dataplane.workers) and each lane's
// LinkGuardian (linkguardian_lanes). Testbed prefix base lfq6.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

func TestRunWorkers(t *testing.T) {
	c, tb := cliOnBed(t, "lfq6", netns.Options{Queues: 2})
	sw1, sw2 := tb.NS("sw1"), tb.NS("sw2")
	base := []string{"run", "--netns", sw1, "--host-port", "host0", "--link-port", "link0", "--mode", "lg"}
	c.fails(t, append(base, "--workers", "3"), "--workers 3", "host0", "2 RX and 2 TX", "ethtool -L host0 combined 3", "queues: 3")
	c.fails(t, append(base, "--workers", "2", "--fastpath", "xdp"), "--workers 2", "--fastpath xdp", "single-worker")

	r1 := startRun(t, c, sw1, "--mode", "lg", "--workers", "2")
	r2 := startRun(t, c, sw2, "--mode", "lg", "--workers", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through lg with 2 workers: %v", err)
	}
	// Both lanes' sessions come up (each lane's own HELLOs on its queue).
	var doc map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		doc = statsDoc(t, c, sw1)
		if lanesUp(doc) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 lane sessions up on sw1: %v", lanesUp(doc), doc["linkguardian_lanes"])
		}
	}
	// The first pings may have crossed before the sessions agreed
	// (unsequenced): ping again over the lanes, and wait for the statistics
	// (published every 20 ms) to show it.
	if err := netns.Command(ctx, tb.NS("h1"), "ping", "-c", "5", "-i", "0.05", "-q", "10.0.0.2").Run(); err != nil {
		t.Fatalf("ping h1→h2 with both lane sessions up: %v", err)
	}
	var lg map[string]any
	var sent uint64
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		doc = statsDoc(t, c, sw1)
		lg, _ = doc["linkguardian"].(map[string]any)
		lanes, _ := doc["linkguardian_lanes"].([]any)
		sent = 0
		for _, l := range lanes {
			m, _ := l.(map[string]any)
			sent += num(m, "core", "sender", "DataSent")
		}
		if sent > 0 || time.Now().After(deadline) {
			break
		}
	}
	if num(lg, "lanes") != 2 || num(lg, "core", "sender", "DataSent") != sent || sent == 0 {
		t.Errorf("linkguardian: lanes %d, core.sender.DataSent %d; want 2 lanes and the lanes' sum %d (> 0: the pings)",
			num(lg, "lanes"), num(lg, "core", "sender", "DataSent"), sent)
	}
	dp, _ := doc["dataplane"].(map[string]any)
	workers, _ := dp["workers"].([]any)
	if len(workers) != 2 {
		t.Errorf("dataplane.workers has %d entries; want 2: %v", len(workers), dp["workers"])
	}
	for i, w := range workers {
		m, _ := w.(map[string]any)
		ports, _ := m["ports"].([]any)
		if num(m, "worker") != uint64(i) || len(ports) != 2 || num(m, "loops") == 0 {
			t.Errorf("dataplane.workers[%d] = %v; want worker %d, 2 ports, loops", i, m, i)
		}
	}
	for _, r := range []*runningCLI{r1, r2} {
		log := r.signal(t, os.Interrupt)
		if !strings.Contains(log, "workers: one per queue") || !strings.Contains(log, "workers=2") {
			t.Errorf("the log does not say it runs 2 workers:\n%s", log)
		}
	}
}

// lanesUp counts the lanes of doc whose link session is up.
func lanesUp(doc map[string]any) int {
	lanes, _ := doc["linkguardian_lanes"].([]any)
	up := 0
	for _, l := range lanes {
		m, _ := l.(map[string]any)
		s, _ := m["session"].(map[string]any)
		if s["state"] == "up" {
			up++
		}
	}
	return up
}
