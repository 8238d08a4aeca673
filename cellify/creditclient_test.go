package cellify

import (
	"math"
	"slices"
	"testing"
)

// The pre-credit lets the first bytes go without a request; beyond it one
// request announces the backlog.
func TestCreditClientPreCredit(t *testing.T) {
	cfg := CreditClientConfig{PreCredit: 4000, Quantum: 16000, Refresh: 100 * credUs}
	c := NewCreditClient(cfg)
	c.Enqueue(3000)
	if send, _, next := c.Poll(0); send || next != math.MaxInt64 {
		t.Fatalf("backlog within the pre-credit: send %v deadline %d, want no request and no timer", send, next)
	}
	if c.Allowed() != 4000 {
		t.Fatalf("allowed %d, want the pre-credit 4000", c.Allowed())
	}
	c.OnSent(3000)
	c.Enqueue(3000)
	send, total, next := c.Poll(10)
	if !send || total != 6000 || next != 10+cfg.Refresh {
		t.Fatalf("backlog beyond the pre-credit: send %v total %d next %d, want a request for 6000, refresh at %d",
			send, total, next, 10+cfg.Refresh)
	}
	if c.Allowed() != 1000 {
		t.Fatalf("allowed %d, want 1000 (pre-credit − sent)", c.Allowed())
	}
}

// The lead lets a VOQ send that far beyond its grant at any time: the
// bytes are still requested, and the lead stands again once the grant
// catches up with what was sent.
func TestCreditClientLead(t *testing.T) {
	cfg := CreditClientConfig{Lead: 2000, Quantum: 16000, Refresh: 100 * credUs}
	c := NewCreditClient(cfg)
	c.Enqueue(1500)
	if c.Allowed() != 2000 {
		t.Fatalf("allowed %d before any grant, want the lead 2000", c.Allowed())
	}
	wantRequest(t, &c, 0, 1500, "bytes beyond the grant")
	c.OnSent(1500)
	c.Enqueue(1500)
	wantRequest(t, &c, 1, 3000, "more backlog")
	if c.Allowed() != 500 {
		t.Fatalf("allowed %d with 1500 sent ahead, want 500", c.Allowed())
	}
	c.OnSent(500)
	if c.Allowed() != 0 {
		t.Fatalf("allowed %d with the lead used, want 0", c.Allowed())
	}
	c.Grant(1500)
	if c.Allowed() != 1500 {
		t.Fatalf("allowed %d after a grant of 1500 (2000 sent), want 1500", c.Allowed())
	}
	c.OnSent(1000) // the backlog is sent: 3000
	c.Grant(3000)
	if c.Allowed() != 2000 {
		t.Fatalf("allowed %d once the grant caught up, want the lead 2000 again", c.Allowed())
	}
}

// New backlog is announced at once while the scheduler's known demand is
// close to the grant, else once per Quantum; a grant catching up with the
// announced demand triggers the announcement of the rest.
func TestCreditClientQuantum(t *testing.T) {
	cfg := CreditClientConfig{Quantum: 10000, Refresh: 100 * credUs}
	c := NewCreditClient(cfg)
	c.Enqueue(50000)
	wantRequest(t, &c, 0, 50000, "first backlog")
	c.Enqueue(1000)
	if send, _, next := c.Poll(1); send || next != cfg.Refresh {
		t.Fatalf("1000 more with 50000 announced and nothing granted: send %v (want none until refresh %d, got %d)",
			send, cfg.Refresh, next)
	}
	c.Enqueue(9000)
	wantRequest(t, &c, 2, 60000, "a quantum more")
	c.Enqueue(10)
	c.Grant(55000)
	wantRequest(t, &c, 3, 60010, "grant within a quantum of the demand")
	if c.Stats.Requests != 3 || c.Stats.Repeats != 0 {
		t.Fatalf("stats %+v", c.Stats)
	}
}

// While backlog exceeds the grant the request repeats every Refresh (a
// lost request costs one interval); once granted, the timer stops.
func TestCreditClientRefresh(t *testing.T) {
	cfg := CreditClientConfig{Quantum: 1000, Refresh: 100 * credUs}
	c := NewCreditClient(cfg)
	c.Enqueue(5000)
	c.Poll(0) // lost
	if send, _, next := c.Poll(cfg.Refresh - 1); send || next != cfg.Refresh {
		t.Fatalf("before the refresh: send %v next %d", send, next)
	}
	send, total, next := c.Poll(cfg.Refresh)
	if !send || total != 5000 || next != 2*cfg.Refresh || c.Stats.Repeats != 1 {
		t.Fatalf("at the refresh: send %v total %d next %d stats %+v", send, total, next, c.Stats)
	}
	c.Grant(5000)
	if send, _, next := c.Poll(3 * cfg.Refresh); send || next != math.MaxInt64 {
		t.Fatalf("fully granted: send %v next %d", send, next)
	}
}

// Repeats of a request back off, Refresh, Refresh, then doubling to
// RefreshMax, while the VOQ stays behind its grant: a grant that raises the
// total but not to the backlog (the scheduler is serving the VOQ, other
// sources' grants between) moves the timer but keeps the backoff; a request
// after the VOQ was granted all it asked for starts again at Refresh.
func TestCreditClientRepeatBackoff(t *testing.T) {
	const r = 100 * credUs
	cfg := CreditClientConfig{Quantum: 1000, Refresh: r, RefreshMax: 10 * r}
	c := NewCreditClient(cfg)
	requests := func(from, to int64) []int64 {
		var at []int64
		for now := from; now < to; {
			send, _, next := c.Poll(now)
			if send {
				at = append(at, (now-from)/r)
			}
			if next == math.MaxInt64 {
				break
			}
			now = next
		}
		return at
	}
	c.Enqueue(50000)
	if at, want := requests(0, 60*r), []int64{0, 1, 2, 4, 8, 16, 26, 36, 46, 56}; !slices.Equal(at, want) {
		t.Fatalf("an unanswered request was sent at %v Refresh, want %v", at, want)
	}
	if !c.Grant(20000) {
		t.Fatal("the grant did not raise the total")
	}
	if at, want := requests(60*r, 90*r), []int64{10, 20}; !slices.Equal(at, want) {
		t.Fatalf("after a grant short of the backlog: requests at %v Refresh, want %v (RefreshMax after it)", at, want)
	}
	c.Grant(50000)
	c.Enqueue(5000) // announced at once; the scheduler had nothing to serve
	if at, want := requests(90*r, 94*r), []int64{0, 1, 2}; !slices.Equal(at, want) {
		t.Fatalf("new backlog after a full grant: requests at %v Refresh, want %v", at, want)
	}
	if c.Stats.Requests != 10+2+3 || c.Stats.Repeats != 9+2+2 {
		t.Fatalf("stats %+v", c.Stats)
	}
}

// Grants are cumulative: stale ones are ignored, ones beyond the largest
// request (an old session's) are cut to it.
func TestCreditClientGrant(t *testing.T) {
	c := NewCreditClient(CreditClientConfig{PreCredit: 100, Quantum: 1, Refresh: 1})
	if c.Grant(1 << 40) {
		t.Fatal("a grant beyond anything requested raised the grant")
	}
	c.Enqueue(5000)
	c.Poll(0)
	if !c.Grant(3000) || c.Granted() != 3000 {
		t.Fatalf("granted %d, want 3000", c.Granted())
	}
	if c.Grant(2000) || c.Granted() != 3000 {
		t.Fatal("a stale grant lowered the total")
	}
	if !c.Grant(9000) || c.Granted() != 5000 {
		t.Fatalf("granted %d after a grant of 9000 with 5000 requested, want 5000", c.Granted())
	}
	if c.Stats.GrantsStale != 1 || c.Stats.GrantsClamped != 2 {
		t.Fatalf("stats %+v", c.Stats)
	}
}

// Reset starts a new session: totals from 0, the grant at the pre-credit,
// the unsent backlog announced anew at once.
func TestCreditClientReset(t *testing.T) {
	c := NewCreditClient(CreditClientConfig{PreCredit: 100, Quantum: 1000, Refresh: 1000})
	c.Enqueue(5000)
	c.Poll(0)
	c.Grant(3000)
	c.OnSent(3000)
	c.Reset()
	if c.Enqueued() != 2000 || c.Sent() != 0 || c.Granted() != 100 {
		t.Fatalf("after reset: enqueued %d sent %d granted %d, want 2000 0 100", c.Enqueued(), c.Sent(), c.Granted())
	}
	wantRequest(t, &c, 1, 2000, "after reset")
}

// With LeadHold, bytes sent within half the lead are announced LeadHold
// after the first of them, in one request for all (a request per short
// message tripled the frames each cost); a backlog beyond half the lead is
// announced at once, and a VOQ whose grant has caught up starts a new hold.
func TestCreditClientLeadHold(t *testing.T) {
	hold := 500 * credUs
	cfg := CreditClientConfig{Lead: 4000, Quantum: 16000, Refresh: 100 * credUs, Gap: 10 * credUs, LeadHold: hold}
	c := NewCreditClient(cfg)
	at := int64(0)
	for i := range 5 { // five 200-byte messages, 50 µs apart
		c.Enqueue(200)
		c.OnSent(200)
		send, _, next := c.Poll(at)
		if send || next != hold {
			t.Fatalf("message %d within half the lead: send %v, deadline %d; want none before %d", i, send, next, hold)
		}
		at += 50 * credUs
	}
	send, total, _ := c.Poll(hold)
	if !send || total != 1000 || c.Stats.Requests != 1 {
		t.Fatalf("at the hold's end: send %v total %d (%d requests), want one request for 1000", send, total, c.Stats.Requests)
	}
	c.Grant(1000)
	if send, _, next := c.Poll(hold + 1); send || next != math.MaxInt64 {
		t.Fatalf("granted in full: send %v deadline %d, want nothing", send, next)
	}
	// A new spell starts a new hold; passing half the lead ends it at once.
	t0 := hold + 10*credUs
	c.Enqueue(1500)
	c.OnSent(1500)
	if send, _, next := c.Poll(t0); send || next != t0+hold {
		t.Fatalf("a new spell: send %v deadline %d, want none before %d", send, next, t0+hold)
	}
	c.Enqueue(1000)
	wantRequest(t, &c, t0+credUs, 3500, "2500 bytes beyond the grant (half the lead is 2000)")
	// Without a lead nothing is held.
	c = NewCreditClient(CreditClientConfig{Quantum: 16000, Refresh: 100 * credUs, LeadHold: hold})
	c.Enqueue(200)
	if send, _, _ := c.Poll(0); !send {
		t.Fatal("no lead: the bytes wait for a grant, and the request was held")
	}
}

// wantRequest polls c at now and fails unless it sends a request for
// total bytes.
func wantRequest(t *testing.T, c *CreditClient, now int64, total uint64, what string) {
	t.Helper()
	if send, got, _ := c.Poll(now); !send || got != total {
		t.Fatalf("%s: send %v total %d, want a request for %d", what, send, got, total)
	}
}

// With Ahead a request names that much beyond the backlog; the grant of it
// is taken (not cut to the backlog) and covers the next bytes without a
// request; what of it stays unused stays, however long (the scheduler
// does not count it in flight), and the next bytes beyond it are asked for
// with Ahead again.
func TestCreditClientAhead(t *testing.T) {
	cfg := CreditClientConfig{Lead: 4000, Ahead: 6000, Quantum: 16000, Refresh: 100 * credUs}
	c := NewCreditClient(cfg)
	c.Enqueue(3000)
	c.OnSent(3000)
	wantRequest(t, &c, 0, 9000, "backlog and Ahead")
	if !c.Grant(9000) || c.Granted() != 9000 {
		t.Fatalf("grant of the total asked: granted %d, want 9000", c.Granted())
	}
	if c.Allowed() != 10000 {
		t.Fatalf("allowed %d, want granted + lead − sent = 10000", c.Allowed())
	}
	c.Enqueue(2000)
	c.OnSent(2000)
	if send, _, next := c.Poll(10); send || next != math.MaxInt64 {
		t.Fatalf("backlog within the grant: send %v next %d, want no request and no timer", send, next)
	}
	if send, _, next := c.Poll(1 << 40); send || next != math.MaxInt64 || c.Allowed() != 4000+cfg.Lead {
		t.Fatalf("long after: send %v next %d allowed %d, want the credit ahead kept (allowed %d)", send, next, c.Allowed(), 4000+cfg.Lead)
	}
	c.Enqueue(4100)
	wantRequest(t, &c, 1<<40, 9100+6000, "beyond the grant")
	// A grant beyond the total asked is cut to it.
	c.Grant(20000)
	if c.Granted() != 15100 || c.Stats.GrantsClamped != 1 {
		t.Fatalf("granted %d (clamped %d), want 15100", c.Granted(), c.Stats.GrantsClamped)
	}
}
