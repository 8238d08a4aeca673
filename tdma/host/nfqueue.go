package host

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os/exec"
	"strconv"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/nfq"
	"github.com/linkfabric/linkfabric/tdma/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// GSOMax caps the host's GSO packets in nfqueue mode by default
// (Config.GSOMax), so one verdict releases at most this much (a 64 KB skb
// is 5 ms at 100 Mbit/s).
const GSOMax = 16 << 10

// ruleArgs is the iptables-legacy rule that queues traffic to dst.
func (a *Agent) ruleArgs(op string, dst string) []string {
	return []string{"-t", "mangle", op, "POSTROUTING", "-o", a.cfg.Dev, "-d", dst, "-j", "NFQUEUE",
		"--queue-num", strconv.Itoa(int(a.cfg.Queue)), "--queue-bypass"}
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables-legacy", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables-legacy %v: %v: %s (scripts/deps.sh installs the iptables package)", args, err, bytes.TrimSpace(out))
	}
	return nil
}

// ackArgs is the rule that lets small TCP packets (pure ACKs, SYNs)
// bypass the gate, as class 7 (design §3.1: otherwise ACK clocking
// becomes per-round and tail-loss probes fire spuriously).
func (a *Agent) ackArgs(op string) []string {
	return []string{"-t", "mangle", op, "POSTROUTING", "-o", a.cfg.Dev, "-p", "tcp", "-m", "length", "--length", "0:100", "-j", "RETURN"}
}

// openNFQ binds the queue, caps GSO and installs one rule per peer.
func (a *Agent) openNFQ() error {
	q, err := nfq.Open(nfq.Config{Num: a.cfg.Queue, Copy: nfq.CopyPacket, Range: 64, MaxLen: 65536, Flags: nfq.FlagGSO})
	if err != nil {
		return fmt.Errorf("host: nfqueue %d: %w", a.cfg.Queue, err)
	}
	a.q = q
	if l, err := netlink.LinkByName(a.cfg.Dev); err == nil {
		gso := cmp.Or(a.cfg.GSOMax, GSOMax)
		if err := netlink.LinkSetGSOMaxSize(l, gso); err != nil {
			return fmt.Errorf("host: ip link set %s gso_max_size %d: %w", a.cfg.Dev, gso, err)
		}
	}
	if err := iptables(a.ackArgs("-A")...); err != nil {
		return err
	}
	for j, h := range a.cfg.Hosts {
		if j == a.cfg.Index {
			continue
		}
		if err := iptables(a.ruleArgs("-A", h.String())...); err != nil {
			return err
		}
	}
	return nil
}

// closeNFQ removes the rules (held packets are then accepted: --queue-bypass).
func (a *Agent) closeNFQ() {
	if a.q == nil {
		return
	}
	for j, h := range a.cfg.Hosts {
		if j != a.cfg.Index {
			iptables(a.ruleArgs("-D", h.String())...)
		}
	}
	iptables(a.ackArgs("-D")...)
	a.q.Close()
	a.q = nil
}

// ActiveDemand is the demand an nfqueue gate reports for an active
// destination with Config.NFQActive: more than any round carries.
const ActiveDemand = 1 << 30

type held struct {
	id  uint32
	len int
}

// nfqLoop holds gated packets per destination and releases them by
// verdicts inside the windows.
func (a *Agent) nfqLoop() error {
	N := len(a.cfg.Hosts)
	fifo := make([][]held, N)
	bytesQ := make([]int64, N)
	heldAt := make([]int64, N) // when a packet for j was last held (clock ns)
	demand := func(j int) int64 {
		if a.cfg.NFQActive > 0 && heldAt[j] != 0 && clock.Now()-heldAt[j] <= int64(a.cfg.NFQActive) {
			return ActiveDemand
		}
		return bytesQ[j]
	}
	var c ctlBufs
	c.init()
	var pkts []nfq.Packet
	fds := []unix.PollFd{{Fd: int32(a.ctl.Fd()), Events: unix.POLLIN}, {Fd: int32(a.q.Fd()), Events: unix.POLLIN}}
	var lastRep uint32
	onSched := func(s *wire.Schedule) {
		if s.Round != lastRep {
			lastRep = s.Round
			a.report(s.Round, demand)
		}
	}
	openLat := clock.NewLateness()
	var winKey uint64
	nheld := 0
	for !a.stop.Load() {
		now := clock.Now()
		a.pollControl(now, &c, onSched)
		if a.over(now) {
			break
		}
		fds[1].Revents = 0
		if n, _ := unix.Poll(fds[1:], 0); n > 0 {
			var err error
			if pkts, err = a.q.Receive(pkts[:0]); err != nil {
				return fmt.Errorf("host: nfqueue receive: %w", err)
			}
			for _, p := range pkts {
				j := a.dstOf(p.Payload)
				if j < 0 { // not ours to gate
					a.q.Verdict(p.ID, nfq.Accept)
					continue
				}
				fifo[j] = append(fifo[j], held{p.ID, p.Len})
				bytesQ[j] += int64(p.Len)
				heldAt[j] = now
				nheld++
			}
			a.s.NFQHeldMax = max(a.s.NFQHeldMax, nheld)
			if lastRep == 0 {
				a.report(0, demand)
			}
		}
		mask := a.g.Open(now)
		wake := int64(math.MaxInt64)
		for cl := 0; cl < 8 && mask != 0; cl++ {
			if mask&(1<<cl) == 0 {
				continue
			}
			w, ok := a.g.Window(now, cl)
			if !ok || w.Dst < 0 || w.Dst >= N {
				continue
			}
			for len(fifo[w.Dst]) > 0 {
				p := fifo[w.Dst][0]
				if a.g.Fit(now, w, p.len+14) < p.len+14 {
					break
				}
				if err := a.q.Verdict(p.id, nfq.Accept); err != nil {
					return fmt.Errorf("host: nfqueue verdict: %w", err)
				}
				a.g.Sent(now, w, p.len+14)
				if key := uint64(w.Round)<<8 | uint64(w.Slot); key != winKey {
					winKey = key
					a.s.ClassWindows[cl]++
					if w.OpenAt > 0 {
						openLat.Add(now - w.OpenAt)
						if now-w.OpenAt > lateOpen {
							a.s.LateOpens++
						}
					}
				}
				a.s.ClassBytes[cl] += uint64(p.len)
				a.s.SentBytes[w.Dst] += int64(p.len)
				a.s.NFQReleased++
				bytesQ[w.Dst] -= int64(p.len)
				fifo[w.Dst] = fifo[w.Dst][1:]
				nheld--
			}
		}
		gd, opens := a.g.NextDeadlineOpens(now)
		target := min(gd, wake, now+maxWait)
		a.wait(fds, clock.Now(), target, opens && target == gd)
	}
	for j := range fifo { // let go of whatever is still held
		for _, p := range fifo[j] {
			a.q.Verdict(p.id, nfq.Accept)
		}
	}
	a.s.OpenLateP50, a.s.OpenLateP99 = openLat.Quantile(0.5), openLat.Quantile(0.99)
	return nil
}

// dstOf maps an IPv4 packet's destination to a host index, -1 if none.
func (a *Agent) dstOf(ip []byte) int {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return -1
	}
	var d [4]byte
	copy(d[:], ip[16:20])
	for j, h := range a.cfg.Hosts {
		if h.As4() == d && j != a.cfg.Index {
			return j
		}
	}
	return -1
}
