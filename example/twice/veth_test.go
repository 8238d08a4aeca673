package twice

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/dataplane/dataplanetest"
	"github.com/linkfabric/linkfabric/netns"
)

// Mode twice on the pair testbed with 20 % of sw1 → sw2's frames lost: the
// pings lose about 4 % (both copies), never 20 %; h1 never sees a
// duplicate reply; and sw2 counts every copy it received.
func TestTwiceVeth(t *testing.T) {
	netns.RequireRoot(t)
	tb := netns.TestUp(t, "lftw", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	dataplanetest.Start(t, tb.NS("sw1"), dataplane.Config{Mode: Mode})
	sw2 := dataplanetest.Start(t, tb.NS("sw2"), dataplane.Config{Mode: Mode})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through mode twice: %v", err)
	}
	if err := sw2.Link().Program().SetImpair(bpf.Loss(0.2, 0, 1)); err != nil {
		t.Fatal(err)
	}
	out, err := netns.Command(ctx, tb.NS("h1"), "ping", "-c", "500", "-i", "0.005", "-W", "1", "10.0.0.2").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "received") {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	summary := string(out[strings.LastIndex(string(out), "---"):])
	t.Log(summary)
	if strings.Contains(string(out), "DUP!") {
		t.Error("h1 received a duplicate reply: a second copy reached a host")
	}
	var sent, got int
	if _, err := fmt.Sscanf(summary[strings.Index(summary, "\n")+1:], "%d packets transmitted, %d received", &sent, &got); err != nil {
		t.Fatalf("no ping summary (%v):\n%s", err, summary)
	}
	if got < sent*9/10 {
		t.Errorf("%d of %d pings answered at 20 %% one-way loss: two copies should lose about 4 %%", got, sent)
	}
	st := sw2.ModeStats()["twice"].(map[string]uint64)
	t.Logf("sw2: %v", st)
	if st["bad"] != 0 || st["duplicates"] == 0 || st["delivered"] < uint64(got) {
		t.Errorf("sw2's counters %v: want no bad frame, second copies dropped, at least %d delivered", st, got)
	}
}
