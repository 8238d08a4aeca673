// Package lossmon measures a link's loss rate, the input of the protection
// policies: LinkGuardian's linkguardian.Policy (the software counterpart of
// its corruptd, paper Appendix C, and automatic fallback, §5) and FEC's
// fec.LinkTable.
//
// A Monitor keeps a time-based moving window of (received, lost) counts in a
// ring of buckets. The receiver feeds it from sequence gaps (Observe), or a
// poller feeds it from a NIC's cumulative frame/CRC-error counters
// (ObserveTotals).
//
// Time is a caller-supplied monotonic clock in nanoseconds (int64); nothing
// here starts a timer or a goroutine.
package lossmon

import (
	"fmt"
	"sync/atomic"
)

// Monitor is a moving-window loss-rate estimator.
//
// Observe and ObserveTotals must be called from one goroutine (the single
// writer, typically the port's receive worker); they take no locks and do not
// allocate. Rate, Totals and the other readers may be called from any
// goroutine at the same time as the writer: every field is read atomically
// and a bucket being recycled is skipped, so a concurrent reader may at worst
// miss the counts of the bucket the writer is starting at that instant.
type Monitor struct {
	width      int64 // bucket width, ns
	minSamples uint64
	buckets    []bucket

	// Writer-only fast path: the bucket that covers [curStart, curEnd).
	cur      *bucket
	curEpoch int64
	curEnd   int64

	// Writer-only state of ObserveTotals.
	lastOK, lastErr uint64
	totalsPrimed    bool
	// Number of counter decreases seen by ObserveTotals (NIC reset, driver reload).
	resets atomic.Uint64
}

// bucket counts one width-long slice of time. epoch = now/width of the slice
// it holds; epochEmpty marks a bucket being recycled or never used.
type bucket struct {
	epoch    atomic.Int64
	received atomic.Uint64
	lost     atomic.Uint64
}

const epochEmpty = -1 << 63

// Config configures a Monitor.
type Config struct {
	// Window is the length of the moving window in nanoseconds (> 0).
	// The paper's corruptd uses a window of 100M frames polled every second;
	// at 10 Gb/s of MTU frames that is about two minutes.
	Window int64
	// Buckets is the number of ring buckets the window is split into (≥ 1).
	// Rate covers the last Buckets-1 full buckets plus the current partial
	// one, so the window "slides" in steps of Window/Buckets. 0 means 16.
	Buckets int
	// MinSamples is the number of frames (received + lost) the window must
	// hold before Rate reports ok. To tell a loss rate r from zero with any
	// confidence you need well over 1/r frames; to act on 1e-8 (the paper's
	// activation threshold) set it to a few times 1e8.
	MinSamples uint64
}

// New returns a Monitor for cfg. It fails if Window ≤ 0, Buckets < 0, or
// Window/Buckets is less than 1 ns.
func New(cfg Config) (*Monitor, error) {
	if cfg.Buckets == 0 {
		cfg.Buckets = 16
	}
	if cfg.Window <= 0 || cfg.Buckets < 0 {
		return nil, fmt.Errorf("lossmon: window %d ns with %d buckets: need window > 0 ns and buckets ≥ 1", cfg.Window, cfg.Buckets)
	}
	width := cfg.Window / int64(cfg.Buckets)
	if width < 1 {
		return nil, fmt.Errorf("lossmon: window %d ns split into %d buckets is below 1 ns per bucket: use fewer buckets", cfg.Window, cfg.Buckets)
	}
	m := &Monitor{width: width, minSamples: cfg.MinSamples, buckets: make([]bucket, cfg.Buckets)}
	for i := range m.buckets {
		m.buckets[i].epoch.Store(epochEmpty)
	}
	m.curEnd = epochEmpty // forces bucket selection on first Observe
	return m, nil
}

// Window returns the effective window length (Buckets × bucket width) in ns.
func (m *Monitor) Window() int64 { return m.width * int64(len(m.buckets)) }

// Observe adds received frames and lost frames (detected as sequence gaps)
// seen at time now. Count transmissions: a retransmission that arrives is
// one more received frame. Times must be non-decreasing; an observation
// older than the current bucket is added to the current bucket.
func (m *Monitor) Observe(now int64, received, lost uint64) {
	if now >= m.curEnd || m.cur == nil {
		m.advance(now)
	}
	b := m.cur
	// Single writer: load+store instead of a locked add.
	if received != 0 {
		b.received.Store(b.received.Load() + received)
	}
	if lost != 0 {
		b.lost.Store(b.lost.Load() + lost)
	}
}

// advance makes m.cur the bucket for now, recycling it if it held an older epoch.
func (m *Monitor) advance(now int64) {
	e := floorDiv(now, m.width)
	if m.cur != nil && e <= m.curEpoch {
		return // time went backwards: keep the current bucket
	}
	b := &m.buckets[floorMod(e, int64(len(m.buckets)))]
	if b.epoch.Load() != e {
		// Recycle: hide the bucket from readers while its counts are reset.
		b.epoch.Store(epochEmpty)
		b.received.Store(0)
		b.lost.Store(0)
		b.epoch.Store(e)
	}
	m.cur, m.curEpoch, m.curEnd = b, e, (e+1)*m.width
}

// ObserveTotals feeds the monitor from cumulative hardware counters, such as
// a NIC's received-frame count (rx_packets / framesRxOk) and its FCS/CRC
// error count (rx_crc_errors, framesRxAll − framesRxOk), read at time now.
// The first call only records the baseline. A counter that goes backwards
// (NIC reset) re-baselines without observing anything. Use a separate
// Monitor for counter input and for sequence-gap input of the same link, or
// the same frames are counted twice.
func (m *Monitor) ObserveTotals(now int64, rxOK, rxErrors uint64) {
	if !m.totalsPrimed || rxOK < m.lastOK || rxErrors < m.lastErr {
		if m.totalsPrimed {
			m.resets.Add(1)
		}
		m.lastOK, m.lastErr, m.totalsPrimed = rxOK, rxErrors, true
		return
	}
	m.Observe(now, rxOK-m.lastOK, rxErrors-m.lastErr)
	m.lastOK, m.lastErr = rxOK, rxErrors
}

// CounterResets returns how many times ObserveTotals saw a counter go backwards.
func (m *Monitor) CounterResets() uint64 { return m.resets.Load() }

// Totals returns the received and lost frames in the window ending at now:
// the buckets of the last len(buckets) epochs up to and including now's.
func (m *Monitor) Totals(now int64) (received, lost uint64) {
	e := floorDiv(now, m.width)
	n := int64(len(m.buckets))
	for i := range m.buckets {
		b := &m.buckets[i]
		be := b.epoch.Load()
		if be == epochEmpty || be > e || be <= e-n {
			continue
		}
		r, l := b.received.Load(), b.lost.Load()
		if b.epoch.Load() != be {
			continue // recycled while we read it
		}
		received += r
		lost += l
	}
	return received, lost
}

// Rate returns the loss rate lost/(received+lost) over the window ending at
// now, and ok = false when the window holds fewer than MinSamples frames (or
// none at all). The rate is computed even when ok is false, for display;
// with no frames it is 0.
func (m *Monitor) Rate(now int64) (rate float64, ok bool) {
	r, l := m.Totals(now)
	total := r + l
	if total == 0 {
		return 0, false
	}
	return float64(l) / float64(total), total >= m.minSamples
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
