package tdmaexp

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// TDMAFreezeConfig is ctlloss's FM freeze (design §4 item 7): during a
// shuffle, once At of its bytes have crossed the switch, the FM process
// gets SIGSTOP, and SIGCONT Dur later.
type TDMAFreezeConfig struct {
	Dur   time.Duration `json:"freeze_ns"` // 0: no freeze
	At    float64       `json:"at"`        // share of the shuffle's bytes through the switch
	Modes []string      `json:"modes"`
}

// Check outcomes.
const (
	Met         = "met"
	Missed      = "missed"
	NotMeasured = "not measured"
)

// FreezeHost is what one host did around the freeze. Times are ms from
// the STOP (Heard, SilentFrom) or from the CONT (Resume).
type FreezeHost struct {
	Host int `json:"host"` // 1-based
	// State: silent (a silence spans the CONT), done-before (its last frame
	// left before the STOP), done-during (its last frame left during the
	// freeze), sent-nothing, started-after (its first frame left after the
	// CONT), or sending-at-cont (no silence spans the CONT).
	State              string  `json:"state"`
	HeardMs            float64 `json:"last_heard_ms"`         // last control frame heard before the silence
	SilentFromMs       float64 `json:"silent_from_ms"`        // the last byte before the silence left the line
	SilentAfterHeardMs float64 `json:"silent_after_heard_ms"` // ≤ lease
	ResumeMs           float64 `json:"resume_after_cont_ms"`  // first frame released after the CONT; ≤ round
	SendSinceCtlMaxMs  float64 `json:"send_since_ctl_max_ms"` // the whole run's longest; ≤ lease
	Silent             bool    `json:"silent_within_lease"`
	Resumed            bool    `json:"resumed"` // a frame was released after the CONT
}

// FreezeResult is the freeze's measurement.
type FreezeResult struct {
	StopNs, ContNs int64        `json:"-"`
	Triggered      bool         `json:"triggered"`
	TriggerBytes   uint64       `json:"trigger_bytes"` // switch egress bytes at the STOP
	FrozenMs       float64      `json:"frozen_ms"`     // STOP sent to CONT sent
	LeaseMs        float64      `json:"lease_ms"`      // lease slots × slot
	RoundMs        float64      `json:"round_ms"`      // hosts × slot
	Hosts          []FreezeHost `json:"hosts"`
	SilentMaxMs    float64      `json:"silent_after_heard_max_ms"`
	ResumeMaxMs    float64      `json:"resume_after_cont_max_ms"`
	Silent         string       `json:"silent_within_lease"` // met, missed, not measured
	Resume         string       `json:"resume_within_round"`
	Note           string       `json:"note,omitempty"`
	Summary        FreezeSumm   `json:"summary"`
}

// FreezeSumm is a freeze's verdict and what it rests on.
type FreezeSumm struct {
	// Verdict: met if every host was silent within the lease and every
	// host with data left resumed within a round, missed if either check
	// missed, not measured otherwise.
	Verdict     string         `json:"verdict"`
	SilentMaxMs float64        `json:"silent_after_heard_max_ms"`
	ResumeMaxMs float64        `json:"resume_after_cont_max_ms"`
	Hosts       int            `json:"hosts"`
	Silent      int            `json:"hosts_silent_within_lease"`
	Resumed     int            `json:"hosts_resumed"`
	States      map[string]int `json:"states,omitempty"` // hosts by state
}

// summarize fills r's summary from its checks and hosts.
func (r *FreezeResult) summarize() {
	s := FreezeSumm{Verdict: checksVerdict(r.Silent, r.Resume), SilentMaxMs: r.SilentMaxMs, ResumeMaxMs: r.ResumeMaxMs, Hosts: len(r.Hosts)}
	for _, h := range r.Hosts {
		if s.States == nil {
			s.States = map[string]int{}
		}
		s.States[h.State]++
		if h.Silent {
			s.Silent++
		}
		if h.Resumed {
			s.Resumed++
		}
	}
	r.Summary = s
}

// checksVerdict is met if both checks were met, missed if either was
// missed, not measured otherwise.
func checksVerdict(silent, resume string) string {
	switch {
	case silent == Missed || resume == Missed:
		return Missed
	case silent == Met && resume == Met:
		return Met
	}
	return NotMeasured
}

// untriggered is the result of a freeze that did not happen (note: why).
func untriggered(note string) FreezeResult {
	r := FreezeResult{Note: note, Silent: NotMeasured, Resume: NotMeasured}
	r.summarize()
	return r
}

// CheckFreeze measures the freeze from the agents' statistics: every host
// silent within the lease (no byte on its line later than lease after the
// last control frame it heard, over the whole run and before the silence
// that spans the CONT), and every host with data left sending again within
// round of the CONT. stop and cont are clock ns; lease and round ns.
func CheckFreeze(stop, cont, lease, round int64, hosts []host.Stats) FreezeResult {
	ms := func(d int64) float64 { return float64(d) / 1e6 }
	r := FreezeResult{StopNs: stop, ContNs: cont, Triggered: true, FrozenMs: ms(cont - stop), LeaseMs: ms(lease), RoundMs: ms(round),
		Silent: Met, Resume: NotMeasured}
	resumed, sending := 0, 0
	for i, h := range hosts {
		f := FreezeHost{Host: i + 1, SendSinceCtlMaxMs: ms(h.SendSinceCtlMax)}
		f.Silent = h.SendSinceCtlMax <= lease
		var span *host.SendGap
		for k := range h.Gaps {
			if g := &h.Gaps[k]; g.Len() > 0 && g.From <= cont && g.To >= cont {
				span = g
				break
			}
		}
		switch {
		case span != nil:
			f.State, f.Resumed = "silent", true
			f.HeardMs, f.SilentFromMs = ms(span.Heard-stop), ms(span.From-stop)
			f.SilentAfterHeardMs, f.ResumeMs = ms(span.From-span.Heard), ms(span.To-cont)
			f.Silent = f.Silent && span.Heard != 0 && span.From-span.Heard <= lease
			r.ResumeMaxMs = max(r.ResumeMaxMs, f.ResumeMs)
			resumed++
			if span.To-cont > round {
				r.Resume = Missed
			}
		case h.LastSend == 0:
			f.State = "sent-nothing"
		case h.LastSend < stop:
			f.State = "done-before"
		case h.LastSend <= cont:
			f.State = "done-during"
		case h.FirstSend > cont:
			f.State = "started-after" // its agent came up late: silent throughout
		default:
			f.State, f.Silent = "sending-at-cont", false
			sending++
		}
		r.SilentMaxMs = max(r.SilentMaxMs, f.SendSinceCtlMaxMs, f.SilentAfterHeardMs)
		if !f.Silent {
			r.Silent = Missed
		}
		r.Hosts = append(r.Hosts, f)
	}
	if resumed > 0 && r.Resume != Missed {
		r.Resume = Met
	}
	if resumed == 0 && sending == 0 {
		r.Note = "no host had data left after the CONT: freeze earlier (--freeze-at) or send more (--size)"
	}
	r.summarize()
	return r
}

// freezeHook returns the FM hook of a freeze: it waits until trigger bytes
// have left the switch's ports (the shuffle is under way), stops the FM for
// dur and lets it go on, and notes the times in r.
func freezeHook(n int, trigger uint64, dur time.Duration, r *FreezeResult) fmHook {
	return func(ctx context.Context, tb *netns.Testbed, p *os.Process) {
		devs := make([]string, n)
		for i := range devs {
			devs[i] = "p" + strconv.Itoa(i+1)
		}
		qr, err := netns.NewQdiscReader(tb.NS("sw"), devs)
		if err != nil {
			r.Note = "freeze: " + err.Error()
			return
		}
		defer qr.Close()
		st := make([]netns.QdiscStat, n)
		sum := func() uint64 {
			var s uint64
			if qr.Read(st) == nil {
				for _, q := range st {
					s += q.SentBytes
				}
			}
			return s
		}
		base := sum()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				r.Note = fmt.Sprintf("not triggered: the shuffle ended before %d bytes crossed the switch", trigger)
				return
			case <-t.C:
			}
			if sent := sum() - base; sent >= trigger {
				r.TriggerBytes = sent
				break
			}
		}
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			r.Note = "freeze: SIGSTOP: " + err.Error()
			return
		}
		r.StopNs = clock.Now()
		time.Sleep(dur)
		r.ContNs = clock.Now() // before the CONT: the FM cannot run earlier
		if err := p.Signal(syscall.SIGCONT); err != nil {
			r.Note = "freeze: SIGCONT: " + err.Error()
		}
		r.Triggered = true
	}
}
