package dataplane

import (
	"errors"
	"strconv"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/xdp"
)

// registerOps exports what an operator alerts on besides the frame
// counters: the build, each port's XDP attachment and its program's
// counters (the drops in the kernel), each AF_XDP socket's mode and the
// kernel's XDP_STATISTICS (the drops between the kernel and the worker),
// each direction of the fast path with the reason it is not on the
// kernel's, and the integrity check of each worker's link frames. Values
// are read at export (a syscall or a map lookup each), never by a worker.
func (d *Dataplane) registerOps(r *metrics.Registry) error {
	var errs metrics.Errs
	add := errs.Add
	add(metrics.RegisterBuildInfo(r))
	for _, p := range d.all {
		if p.prog != nil {
			add(registerProgram(r, p))
		}
		for _, s := range p.socks {
			add(registerSocket(r, p, s))
		}
	}
	if d.fast != nil {
		add(d.registerFastPath(r))
	}
	if ic, ok := d.inst.(integrityCounter); ok {
		for w := range max(d.cfg.Workers, 1) {
			st := ic.Integrity(w)
			l := []string{"worker", strconv.Itoa(w)}
			add(r.Counter("linkfabric_integrity_errors_total", "Link frames that failed the integrity check (dropped; the mechanism sees them as lost).", &st.Corrupt, l...))
			add(r.Counter("linkfabric_integrity_no_room_total", "Link frames sent without a trailer: no room after them in their UMEM frame (the peer drops them as corrupt).", &st.NoRoom, l...))
			add(r.Counter("linkfabric_integrity_other_check_total", "Session frames sealed with another integrity check than this end's (the link session names the mismatch).", &st.OtherCheck, l...))
		}
	}
	return errs.Err()
}

// registerProgram exports port p's XDP attachment and its program's
// counters.
func registerProgram(r *metrics.Registry, p *Port) error {
	prog := p.prog
	l := []string{"port", p.Name, "role", string(p.Role)}
	native := 0.0
	if prog.Mode() == bpf.XDPNative {
		native = 1
	}
	errs := []error{
		r.InfoFunc("linkfabric_xdp_attach_info", "How the port's XDP program is attached (mode native or generic) and why not natively (value 1).",
			[]string{"mode", "fallback"}, func() []string {
				why := ""
				if e := prog.FallbackReason(); e != nil {
					why = e.Error()
				}
				return []string{prog.Mode().String(), why}
			}, l...),
		r.GaugeFunc("linkfabric_xdp_native", "1 if the port's XDP program runs in the driver (native), 0 if generic.", func() float64 { return native }, l...),
	}
	counter := readAtExport(prog.Counters)
	errs = append(errs, counterFamily(r, "linkfabric_xdp_frames_total", "Frames the port's XDP program handled, by action (redirected to AF_XDP, passed to the kernel stack, forwarded by the fast path).", counter, l, "action", []countedBy[bpf.ProgCounters]{
		{"redirected", func(c *bpf.ProgCounters) uint64 { return c.Redirected }},
		{"passed", func(c *bpf.ProgCounters) uint64 { return c.Passed }},
		{"forwarded", func(c *bpf.ProgCounters) uint64 { return c.Forwarded }},
	}))
	errs = append(errs, r.CounterFunc("linkfabric_xdp_rx_frames_total", "Frames the port's XDP program saw.", counter(func(c *bpf.ProgCounters) uint64 { return c.RxFrames }), l...))
	errs = append(errs, counterFamily(r, "linkfabric_xdp_dropped_total", "Frames the port's XDP program dropped, by reason (impairment stage; link control from a host; link control not from the peer).", counter, l, "reason", []countedBy[bpf.ProgCounters]{
		{"impairment", func(c *bpf.ProgCounters) uint64 { return c.ImpairDropped }},
		{"host_link_type", func(c *bpf.ProgCounters) uint64 { return c.HostLinkType }},
		{"host_mac_control", func(c *bpf.ProgCounters) uint64 { return c.HostMACControl }},
		{"host_reserved", func(c *bpf.ProgCounters) uint64 { return c.HostReserved }},
		{"foreign_control", func(c *bpf.ProgCounters) uint64 { return c.ForeignControl }},
	}))
	return errors.Join(errs...)
}

// registerSocket exports socket s of port p: its mode and the kernel's
// counters of the frames it dropped.
func registerSocket(r *metrics.Registry, p *Port, s *xdp.Socket) error {
	l := []string{"port", p.Name, "queue", strconv.Itoa(s.Queue())}
	zc := 0.0
	if s.Mode() == xdp.ModeZeroCopy {
		zc = 1
	}
	errs := []error{r.GaugeFunc("linkfabric_afxdp_zerocopy", "1 if the AF_XDP socket is bound in zero-copy mode, 0 in copy mode.", func() float64 { return zc }, l...)}
	stat := readAtExport(s.Stats)
	errs = append(errs, counterFamily(r, "linkfabric_afxdp_dropped_total", "Frames the kernel dropped at the AF_XDP socket, by reason (XDP_STATISTICS).", stat, l, "reason", []countedBy[xdp.Stats]{
		{"rx_dropped", func(s *xdp.Stats) uint64 { return s.RxDropped }},
		{"rx_ring_full", func(s *xdp.Stats) uint64 { return s.RxRingFull }},
		{"rx_invalid_descs", func(s *xdp.Stats) uint64 { return s.RxInvalidDescs }},
		{"tx_invalid_descs", func(s *xdp.Stats) uint64 { return s.TxInvalidDescs }},
	}))
	errs = append(errs,
		r.CounterFunc("linkfabric_afxdp_fill_ring_empty_total", "Times a frame arrived with the socket's fill ring empty (XDP_STATISTICS).", stat(func(s *xdp.Stats) uint64 { return s.RxFillRingEmptyDescs }), l...),
		r.CounterFunc("linkfabric_afxdp_tx_kicks_total", "Transmit wake-ups (sendto) of the socket.", func() uint64 { k, _, _ := s.KickCounters(); return k }, l...),
		r.CounterFunc("linkfabric_afxdp_tx_kick_stalls_total", "Transmit wake-ups that found the kernel busy (EAGAIN/EBUSY).", func() uint64 { _, k, _ := s.KickCounters(); return k }, l...),
		r.CounterFunc("linkfabric_afxdp_tx_kick_nobufs_total", "Transmit wake-ups that failed for want of buffers (ENOBUFS).", func() uint64 { _, _, k := s.KickCounters(); return k }, l...))
	return errors.Join(errs...)
}

// readAtExport returns, for a field of what read returns, a function that
// calls read and gives the field: a counter read at export (0 while read
// fails).
func readAtExport[T any](read func() (T, error)) func(func(*T) uint64) func() uint64 {
	return func(f func(*T) uint64) func() uint64 {
		return func() uint64 {
			v, err := read()
			if err != nil {
				return 0
			}
			return f(&v)
		}
	}
}

// countedBy is one series of a counter family: its label value and the
// field of T it counts.
type countedBy[T any] struct {
	value string
	f     func(*T) uint64
}

// counterFamily exports counter name with one series per entry of by,
// labelled l and key=value, each read through counter.
func counterFamily[T any](r *metrics.Registry, name, help string, counter func(func(*T) uint64) func() uint64, l []string, key string, by []countedBy[T]) error {
	errs := make([]error, 0, len(by))
	for _, c := range by {
		errs = append(errs, r.CounterFunc(name, help, counter(c.f), append(l[:len(l):len(l)], key, c.value)...))
	}
	return errors.Join(errs...)
}

// registerFastPath exports each direction of the fast path.
func (d *Dataplane) registerFastPath(r *metrics.Registry) error {
	var errs []error
	for i, s := range d.fast.snapshot() {
		dir := func() FastPathSnapshot {
			if snap := d.fast.snapshot(); i < len(snap) {
				return snap[i]
			}
			return FastPathSnapshot{}
		}
		l := []string{"from", s.From, "to", s.To}
		errs = append(errs,
			r.GaugeFunc("linkfabric_fastpath_kernel", "1 if the direction's frames take the kernel's XDP path, 0 if they go through the workers (AF_XDP).", func() float64 {
				if dir().Path == FastPathXDP {
					return 1
				}
				return 0
			}, l...),
			r.InfoFunc("linkfabric_fastpath_info", "The direction's path (xdp or afxdp) and why it is not on the kernel's (value 1).",
				[]string{"path", "reason"}, func() []string { s := dir(); return []string{string(s.Path), s.Reason} }, l...),
			r.CounterFunc("linkfabric_fastpath_changes_total", "Switches of the direction between the kernel's path and AF_XDP.", func() uint64 { return dir().Changes }, l...),
			r.CounterFunc("linkfabric_fastpath_frames_total", "Frames the kernel's path carried in the direction.", func() uint64 { return dir().Frames }, l...),
			r.CounterFunc("linkfabric_fastpath_bytes_total", "Bytes the kernel's path carried in the direction.", func() uint64 { return dir().Bytes }, l...),
			r.CounterFunc("linkfabric_fastpath_missed_total", "Frames the kernel's path found no forward port for (sent through AF_XDP instead).", func() uint64 { return dir().Missed }, l...))
	}
	return errors.Join(errs...)
}
