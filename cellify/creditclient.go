package cellify

import "math"

// CreditClientConfig configures the ingress side of one VOQ's credit loop.
type CreditClientConfig struct {
	// PreCredit is the grant total both ends assume at session start (the
	// scheduler's SchedConfig.PreCredit): bytes sent without asking.
	PreCredit uint64
	// Lead is a standing pre-credit: the VOQ may send up to Lead bytes
	// beyond its grant at any time, so the first bytes of a burst after an
	// idle spell go without waiting for a grant (Stardust's low-latency
	// VOQ, §5.6). They are still requested and granted, late: the lead
	// stands again once the grants catch up with what was sent. Unlike
	// PreCredit, which is spent once per session, it returns after every
	// idle spell; the scheduler need not know it. Under incast each source
	// may put Lead bytes unscheduled toward the port.
	Lead uint64
	// Quantum: new backlog is announced at once when the scheduler's known
	// demand is less than Quantum ahead of the grant, else once Quantum
	// bytes more have been enqueued (bounds requests to about one per
	// Quantum bytes). 0 announces every byte.
	Quantum uint64
	// Refresh: while backlog exceeds the grant, the request is repeated
	// Refresh after the last request or the last grant that raised the
	// total, then at backed-off intervals (RefreshMax): a lost request or
	// grant costs time, at most RefreshMax, never a stall.
	Refresh int64
	// RefreshMax: repeats back off, Refresh, Refresh, then doubling up to
	// RefreshMax, from the request that found the VOQ fully granted (0:
	// every Refresh). A VOQ that waits its turn behind other sources'
	// grants would otherwise repeat every Refresh: on fabric3 at a 20M
	// port, with a grant to each VOQ every 50 ms, those repeats and the
	// grants answering them took a fifth of the links into the port.
	RefreshMax int64
	// Gap: while bytes announced are still waiting (their grant, or their
	// turn to be sent), new backlog of less than Quantum is announced at
	// most once per Gap: totals are cumulative, one request says what many
	// would. A VOQ that had sent all it announced announces at once (the
	// first bytes of a burst wait for nothing). 0: at once.
	Gap int64
	// LeadHold: bytes sent within half the Lead are announced LeadHold after
	// the first of them, not at once: one request then covers every short
	// message of that spell. The bytes did not wait for a grant; the request
	// only restores the lead. On the bundle a request (and its grant) per
	// 143-byte message tripled the frames a message cost. The default, 5 ms,
	// leaves back-to-back short flows to the half-lead bound: on the bundle
	// 0.3 requests per 143-byte TCP flow and direction instead of 1.0 at
	// 1 ms. It never delays a byte, and backlog beyond half the lead (bulk,
	// incast) is announced at once as before. 0: at once.
	LeadHold int64
	// Ahead: a request names Ahead bytes beyond those enqueued, so that
	// the grant answering it covers the next Ahead bytes too and the
	// loop (a request, its grant) comes once per Ahead plus half the
	// Lead bytes instead of once per half the Lead. On the bundle each
	// loop woke the source's worker twice and the destination's once:
	// with 143-byte TCP flows back to back, a loop every three flows was
	// most of the workers' runs. Unlike the Lead, the bytes are granted:
	// the scheduler paces them. It counts as credit in flight only what
	// was granted of the bytes enqueued (SchedConfig.Ahead): credit ahead
	// of the backlog stays with the source until bytes use it, and the
	// source's numbering of its bytes stays the scheduler's count of
	// those that arrived. 0: none.
	Ahead uint64
}

// DefaultCreditClientConfig returns defaults matching DefaultSchedConfig.
func DefaultCreditClientConfig() CreditClientConfig {
	return CreditClientConfig{Quantum: 16 << 10, Refresh: 200_000, RefreshMax: DefaultRefreshMax, Gap: 50_000, LeadHold: 5_000_000}
}

// DefaultRefreshMax is the longest repeat interval of an unchanged credit
// total (requests and grants) by default.
const DefaultRefreshMax = 8_000_000

// backoff returns the wait before the next repeat of an unchanged total
// after n repeats: refresh for the first two, then doubling up to most
// (never below refresh).
func backoff(refresh, most int64, n uint32) int64 {
	g := refresh
	for i := uint32(1); i < n && g < most; i++ {
		g *= 2
	}
	return max(refresh, min(g, most))
}

// CreditClientStats counts what a CreditClient did.
type CreditClientStats struct {
	Requests      uint64 // requests to send (first announcements and repeats)
	Repeats       uint64 // ... of which repeats by the refresh timer
	Grants        uint64 // grants received
	GrantsStale   uint64 // ... not above the known total (ignored)
	GrantsClamped uint64 // ... above the largest total requested (cut to it)
	Resets        uint64
}

// CreditClient is the ingress side of one VOQ's credit loop: cumulative
// totals of bytes enqueued, sent and granted. Bytes dropped from the VOQ
// after Enqueue count as sent (they consumed their place in the request).
type CreditClient struct {
	cfg       CreditClientConfig
	enqueued  uint64
	sent      uint64
	granted   uint64
	requested uint64 // the bytes enqueued at the last request
	asked     uint64 // the largest total requested (requested + Ahead)
	reqAt     int64
	// The repeat timer: the next repeat is due backoff(repeats) after
	// base, the last request or grant raise (raised: a grant raised the
	// total since the last Poll, which moves base to its time); repeats
	// counts from the last request made when all requested was granted.
	base    int64
	repeats uint32
	raised  bool
	// over: enqueued has exceeded granted since overAt (LeadHold counts
	// from there).
	over   bool
	overAt int64
	Stats  CreditClientStats
}

// NewCreditClient returns a client at session start.
func NewCreditClient(cfg CreditClientConfig) CreditClient {
	if cfg.Refresh < 1 {
		cfg.Refresh = 1
	}
	return CreditClient{cfg: cfg, granted: cfg.PreCredit}
}

// Enqueued, Sent and Granted return the cumulative totals.
func (c *CreditClient) Enqueued() uint64 { return c.enqueued }
func (c *CreditClient) Sent() uint64     { return c.sent }
func (c *CreditClient) Granted() uint64  { return c.granted }

// Enqueue records bytes joining the VOQ. Call Poll after it.
func (c *CreditClient) Enqueue(bytes int) {
	if bytes > 0 {
		c.enqueued += uint64(bytes)
	}
}

// Allowed returns the bytes the grant lets the VOQ send now (granted +
// Lead − sent; the caller sends at most what it holds).
func (c *CreditClient) Allowed() uint64 {
	lim := c.granted + c.cfg.Lead
	if lim <= c.sent {
		return 0
	}
	return lim - c.sent
}

// OnSent records bytes sent (or dropped) against the grant.
func (c *CreditClient) OnSent(bytes int) {
	if bytes > 0 {
		c.sent += uint64(bytes)
	}
}

// Grant records a received grant total and reports whether it raised the
// grant (then call Poll: announcing more backlog may be due). A total
// beyond the largest one requested (a grant of an older session) is cut to
// it.
func (c *CreditClient) Grant(total uint64) bool {
	c.Stats.Grants++
	if total <= c.granted {
		c.Stats.GrantsStale++
		return false
	}
	if lim := max(c.asked, c.cfg.PreCredit); total > lim {
		c.Stats.GrantsClamped++
		if total = lim; total <= c.granted {
			return false
		}
	}
	c.granted = total
	c.raised = true
	if c.granted >= c.enqueued {
		c.over = false
	}
	return true
}

// Poll says whether to send a request now (send, with the total: the bytes
// ever enqueued plus Ahead) and returns the next deadline (math.MaxInt64:
// none, the grant covers the backlog). A request goes out on new backlog
// beyond the grant (within Gap of the last one only if all it announced was sent, or
// Quantum more came; LeadHold after the backlog passed the grant while it
// stays within half the Lead) and, while backlog beyond the grant remains,
// Refresh after the last request or grant raise, backing off to RefreshMax
// while the VOQ stays behind its grant.
func (c *CreditClient) Poll(now int64) (send bool, total uint64, next int64) {
	if c.raised {
		c.raised, c.base = false, now
	}
	if c.enqueued <= c.granted {
		c.over = false
		return false, 0, math.MaxInt64
	}
	if !c.over {
		c.over, c.overAt = true, now
	}
	fresh := c.enqueued > c.requested &&
		(c.requested < c.granted+c.cfg.Quantum || c.enqueued-c.requested >= c.cfg.Quantum)
	if fresh && c.cfg.LeadHold > 0 && c.enqueued-c.granted <= c.cfg.Lead/2 && now-c.overAt < c.cfg.LeadHold {
		return false, 0, c.overAt + c.cfg.LeadHold
	}
	if fresh && c.requested > c.sent && c.enqueued-c.requested < c.cfg.Quantum && now-c.reqAt < c.cfg.Gap {
		return false, 0, c.reqAt + c.cfg.Gap
	}
	if fresh {
		if c.asked <= c.granted { // the scheduler had nothing to serve
			c.repeats = 0
		}
	} else { // (the first request of a session is always fresh)
		if due := c.base + c.repeatGap(); now < due {
			return false, 0, due
		}
		c.Stats.Repeats++
		c.repeats++
	}
	c.Stats.Requests++
	c.requested, c.reqAt, c.base = c.enqueued, now, now
	total = c.enqueued + c.cfg.Ahead
	c.asked = max(c.asked, total)
	return true, total, now + c.repeatGap()
}

func (c *CreditClient) repeatGap() int64 { return backoff(c.cfg.Refresh, c.cfg.RefreshMax, c.repeats) }

// Reset starts a new session (the peer restarted): every total restarts
// from 0 on both ends. The backlog not yet sent stays and is enqueued anew.
func (c *CreditClient) Reset() {
	backlog := uint64(0)
	if c.enqueued > c.sent {
		backlog = c.enqueued - c.sent
	}
	c.enqueued, c.sent, c.granted = backlog, 0, c.cfg.PreCredit
	c.requested, c.reqAt, c.base, c.repeats, c.raised = 0, 0, 0, 0, false
	c.asked = 0
	c.over = false
	c.Stats.Resets++
}
