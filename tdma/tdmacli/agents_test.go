package tdmacli

import (
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/tdma/gate"
)

func TestParseHostList(t *testing.T) {
	h, err := parseHostList("10.0.0.1-4")
	if err != nil || len(h) != 4 || h[3].String() != "10.0.0.4" {
		t.Fatalf("range: %v %v", h, err)
	}
	h, err = parseHostList("10.0.0.7, 10.0.0.9")
	if err != nil || len(h) != 2 || h[1].String() != "10.0.0.9" {
		t.Fatalf("list: %v %v", h, err)
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.4-2", "x-3", "10.0.0.1,nope"} {
		if _, err := parseHostList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseAgentFlags(t *testing.T) {
	hs, m, r, err := parseAgentFlags("10.0.0.1-2", "freerun", "100M", "the hosts'")
	if err != nil || len(hs) != 2 || m.String() != "freerun" || r != 100e6 {
		t.Fatalf("%v %v %v %v", hs, m, r, err)
	}
	for _, c := range [][3]string{{"x", "lease", "100M"}, {"10.0.0.1-2", "nope", "100M"}, {"10.0.0.1-2", "lease", "0"}, {"10.0.0.1-2", "lease", "fast"}} {
		if _, _, _, err := parseAgentFlags(c[0], c[1], c[2], "the hosts'"); err == nil {
			t.Errorf("%q accepted", c)
		}
	}
}

func TestCapacityFlags(t *testing.T) {
	c := capacityFlags{host: 2, period: 50 * time.Millisecond, low: 0.1, start: 7, burst: "12500", buffer: "64K"}
	caps, err := c.capacities(2, 100e6, 2*time.Millisecond, gate.Lease)
	if err != nil || len(caps) != 1 || caps[0].Host != 1 || caps[0].Start != 7 || caps[0].Period != 50e6 || caps[0].Low != 0.1 || caps[0].Burst != 1e6 || caps[0].Buffer != 5242880 {
		t.Fatalf("%+v %v", caps, err)
	}
	if caps, err := (&capacityFlags{burst: "16K", buffer: "0"}).capacities(2, 100e6, time.Millisecond, gate.FreeRun); err != nil || caps != nil {
		t.Fatalf("no --capacity-host: %+v %v", caps, err)
	}
	for _, bad := range []struct {
		c capacityFlags
		m gate.Discipline
	}{
		{capacityFlags{host: 3, period: time.Second, low: 0.1, burst: "16K", buffer: "0"}, gate.Lease},
		{capacityFlags{host: -1, period: time.Second, low: 0.1, burst: "16K", buffer: "0"}, gate.Lease},
		{capacityFlags{host: 1, period: time.Millisecond, low: 0.1, burst: "16K", buffer: "0"}, gate.Lease},
		{capacityFlags{host: 1, period: time.Second, low: 1, burst: "16K", buffer: "0"}, gate.Lease},
		{capacityFlags{host: 1, period: time.Second, low: 0.1, burst: "16K", buffer: "0"}, gate.FreeRun},
		{capacityFlags{host: 1, period: time.Second, low: 0.1, burst: "lots", buffer: "0"}, gate.Lease},
		{capacityFlags{host: 1, period: time.Second, low: 0.1, burst: "16K", buffer: "big"}, gate.Lease},
	} {
		if _, err := bad.c.capacities(2, 100e6, 2*time.Millisecond, bad.m); err == nil {
			t.Errorf("%+v in %v accepted", bad.c, bad.m)
		}
	}
}
