package netns

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// Shape is a kernel TBF qdisc on each end of a link: rate (bit/s), burst
// (the token bucket, bytes) and limit (the queue in front of it, bytes).
// On a host end it is the NIC's line rate; on a switch end it is the
// egress port and its (shallow) buffer.
type Shape struct {
	Rate  BitRate  `yaml:"rate" json:"rate_bps"`
	Burst ByteSize `yaml:"burst" json:"burst"`
	Limit ByteSize `yaml:"limit" json:"limit"`
}

func (s *Shape) validate() error {
	switch {
	case s == nil:
		return nil
	case s.Rate == 0:
		return errors.New("rate must be > 0 (e.g. rate: 100mbit)")
	case s.Rate/8 >= 1<<32:
		return fmt.Errorf("rate %s: at most 34 Gbit/s", s.Rate)
	case s.Burst < 1600:
		return fmt.Errorf("burst %s: at least one MTU frame (e.g. burst: 16k)", s.Burst)
	case s.Limit < 1600:
		return fmt.Errorf("limit %s: at least one MTU frame (e.g. limit: 64k)", s.Limit)
	}
	return nil
}

// applyShapes puts each shaped link's TBF on both of its ends.
func applyShapes(p string, t *Topology) error {
	for _, l := range t.Links {
		if l.Shape == nil {
			continue
		}
		for _, e := range l.Ends {
			if err := SetTBF(p+e.NS, e.Dev, *l.Shape); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetTBF replaces dev's root qdisc in namespace ns with a TBF of shape s
// (tc qdisc replace dev DEV root tbf rate R burst B limit L).
func SetTBF(ns, dev string, s Shape) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("netns %s: %s: tbf: %w", ns, dev, err)
	}
	h, l, closeH, err := linkFor(ns, dev)
	if err != nil {
		return err
	}
	defer closeH()
	if err := h.QdiscReplace(rootTBF(l.Attrs().Index, s)); err != nil {
		return fmt.Errorf("netns %s: tc qdisc replace dev %s root tbf rate %s burst %s limit %s: %w", ns, dev, s.Rate, s.Burst, s.Limit, err)
	}
	return nil
}

// rootTBF is the root TBF of shape s on the device with ifindex index.
func rootTBF(index int, s Shape) *netlink.Tbf {
	rate := uint64(s.Rate) / 8
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate,
		Limit:      uint32(s.Limit),
		Buffer:     netlink.Xmittime(rate, uint32(s.Burst)),
	}
}

// QdiscStat is a root qdisc's queue: backlog now and drops so far.
type QdiscStat struct {
	Dev          string `json:"dev"`
	Kind         string `json:"kind"` // tbf, noqueue, ...
	BacklogBytes uint32 `json:"backlog_bytes"`
	BacklogPkts  uint32 `json:"backlog_pkts"`
	Drops        uint32 `json:"drops"`
	SentBytes    uint64 `json:"sent_bytes"`
}

// QdiscReader reads root qdisc statistics of devices in one namespace
// over one netlink socket (tc -s qdisc, cheap enough to poll every ms).
type QdiscReader struct {
	h     *netlink.Handle
	close func()
	idx   map[int]int // ifindex → position in devs
	devs  []string
}

// NewQdiscReader opens a reader for devs in namespace ns.
func NewQdiscReader(ns string, devs []string) (*QdiscReader, error) {
	h, closeH, err := handleFor(ns)
	if err != nil {
		return nil, err
	}
	r := &QdiscReader{h: h, close: closeH, idx: map[int]int{}, devs: devs}
	for i, d := range devs {
		l, err := h.LinkByName(d)
		if err != nil {
			closeH()
			return nil, fmt.Errorf("netns %s: %s: %w", ns, d, err)
		}
		r.idx[l.Attrs().Index] = i
	}
	return r, nil
}

// Read fills out (len(devs) entries) with each device's root qdisc stats.
func (r *QdiscReader) Read(out []QdiscStat) error {
	qs, err := r.h.QdiscList(nil)
	if err != nil {
		return err
	}
	for _, q := range qs {
		a := q.Attrs()
		i, ok := r.idx[a.LinkIndex]
		if !ok || a.Parent != netlink.HANDLE_ROOT || a.Statistics == nil {
			continue
		}
		st := a.Statistics
		out[i] = QdiscStat{Dev: r.devs[i], Kind: q.Type()}
		if st.Queue != nil {
			out[i].Drops, out[i].BacklogBytes, out[i].BacklogPkts = st.Queue.Drops, st.Queue.Backlog, st.Queue.Qlen
		}
		if st.Basic != nil {
			out[i].SentBytes = st.Basic.Bytes
		}
	}
	return nil
}

// Close releases the netlink socket.
func (r *QdiscReader) Close() { r.close() }

// LinkTxDrops returns the frames devs in namespace ns dropped on transmit
// (tx_dropped): on veth, a frame the peer's per-CPU input backlog refused
// is counted there, and at no qdisc. (rx_dropped is left out: it also
// counts frames no protocol handler took, such as raw frames that arrive
// before an agent opens its socket.)
func LinkTxDrops(ns string, devs ...string) (uint64, error) {
	return linkStat(ns, devs, func(s *netlink.LinkStatistics) uint64 { return s.TxDropped })
}

// LinkRxDrops returns the receive drops (RX dropped) of devs in ns, summed:
// a veth counts there what its receive side (XDP, NAPI) threw away and
// what its peer's XDP could not send to it.
func LinkRxDrops(ns string, devs ...string) (uint64, error) {
	return linkStat(ns, devs, func(s *netlink.LinkStatistics) uint64 { return s.RxDropped })
}

// linkStat sums one statistic of devs in namespace ns.
func linkStat(ns string, devs []string, stat func(*netlink.LinkStatistics) uint64) (uint64, error) {
	h, closeH, err := handleFor(ns)
	if err != nil {
		return 0, err
	}
	defer closeH()
	var n uint64
	for _, d := range devs {
		l, err := h.LinkByName(d)
		if err != nil {
			return 0, fmt.Errorf("netns %s: %s: %w", ns, d, err)
		}
		if s := l.Attrs().Statistics; s != nil {
			n += stat(s)
		}
	}
	return n, nil
}

// SoftnetDrops returns the frames every CPU's input backlog dropped since
// boot (/proc/net/softnet_stat, second column; net.core.netdev_max_backlog
// bounds the backlog). It is one count for the whole machine, not per
// namespace.
func SoftnetDrops() (uint64, error) {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("/proc/net/softnet_stat: %q: %w", line, err)
		}
		n += v
	}
	return n, nil
}

// TBFRate changes the rate of a root TBF (SetTBF's) over one netlink
// socket, cheaply enough to do every few milliseconds. The burst and limit
// stay, and so does what the queue holds: the kernel's tbf_change resizes
// the child fifo in place (TestTBFRateKeepsQueue).
type TBFRate struct {
	h       *netlink.Handle
	close   func()
	index   int
	ns, dev string
	shape   Shape // the rate last set
}

// NewTBFRate opens dev's root TBF in namespace ns, shaped s (as SetTBF
// left it), for rate changes.
func NewTBFRate(ns, dev string, s Shape) (*TBFRate, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("netns %s: %s: tbf: %w", ns, dev, err)
	}
	h, l, closeH, err := linkFor(ns, dev)
	if err != nil {
		return nil, err
	}
	return &TBFRate{h: h, close: closeH, index: l.Attrs().Index, ns: ns, dev: dev, shape: s}, nil
}

// Set changes the rate to r (tc qdisc change dev DEV root tbf rate R).
func (t *TBFRate) Set(r BitRate) error {
	s := t.shape
	s.Rate = r
	if err := s.validate(); err != nil {
		return fmt.Errorf("netns %s: %s: tbf: %w", t.ns, t.dev, err)
	}
	if err := t.h.QdiscChange(rootTBF(t.index, s)); err != nil {
		return fmt.Errorf("netns %s: tc qdisc change dev %s root tbf rate %s burst %s limit %s: %w", t.ns, t.dev, r, s.Burst, s.Limit, err)
	}
	t.shape = s
	return nil
}

// Close releases the netlink socket.
func (t *TBFRate) Close() { t.close() }
