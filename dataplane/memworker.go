package dataplane

import (
	"github.com/linkfabric/linkfabric/xdp"
)

// NewMemWorker is worker 0 of a dataplane whose ports exist only in
// memory, for tests of a mode's pipeline without sockets: cfg names the
// ports (its defaults are filled in as New fills them), port i has the
// hardware address macs[i], and u holds the frames. start, if not nil,
// starts the mode's instance on the dataplane (in place of its Spec.New,
// which needs bound ports). What a pipeline sends stays on the worker's
// Tx (TakeSent, ReleaseSent); frames handed to it come from Put.
func NewMemWorker(cfg Config, u *xdp.Umem, macs [][6]byte, start func(d *Dataplane, cfg *Config) (Instance, error)) (*Worker, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := &Dataplane{cfg: cfg, umem: u, ports: newPorts(len(cfg.HostPorts), len(cfg.LinkPorts))}
	d.cfg.ownMechs()
	for i, n := range d.cfg.portNames() {
		p := &Port{Name: n}
		if i < len(macs) {
			p.mac = macs[i]
		}
		d.all = append(d.all, p)
	}
	if start != nil {
		in, err := start(d, &d.cfg)
		if err != nil {
			return nil, err
		}
		d.inst = in
	}
	n := d.ports.N()
	w := &Worker{d: d, umem: u, refs: newFrameRefs(u), ports: d.all, shapers: make([]*shaper, n)}
	w.tx.w = w
	w.tx.lists = make([][][]xdp.Desc, n)
	for p := range w.tx.lists {
		w.tx.lists[p] = [][]xdp.Desc{make([]xdp.Desc, 0, 1024)}
	}
	return w, nil
}

// Umem is the worker's UMEM.
func (w *Worker) Umem() *xdp.Umem { return w.umem }

// Put copies b into a free frame of a worker of NewMemWorker, held as if
// received (false: none is free).
func (w *Worker) Put(b []byte) (xdp.Desc, bool) {
	a, ok := w.refs.alloc()
	if !ok {
		return xdp.Desc{}, false
	}
	a += uint64(w.umem.DataOffset())
	copy(w.umem.Frame(a), b)
	return xdp.Desc{Addr: a, Len: uint32(len(b))}, true
}

// TakeSent is what the pipeline of a worker of NewMemWorker listed on
// port's TX list since the last call: valid until the next send on it.
func (w *Worker) TakeSent(port int) []xdp.Desc {
	l := w.tx.lists[port][0]
	w.tx.lists[port][0] = l[:0]
	return l
}

// ReleaseSent frees the frames sent or released on a worker of
// NewMemWorker since the last call, as their completions would.
func (w *Worker) ReleaseSent() {
	for _, a := range w.tx.rel {
		w.refs.release(a)
	}
	w.tx.rel = w.tx.rel[:0]
}

// SetDownSince marks port i down since t (0: up) on a worker of
// NewMemWorker, as the link watcher would.
func (w *Worker) SetDownSince(i int, t int64) { w.ports[i].downSince = t }

// InFlight is how many of the worker's frames are held, and how many
// sent and not yet completed (0, 0 once a pipeline is done with all).
func (w *Worker) InFlight() (held, outstanding int) { return w.refs.inFlight() }

// Released is what the pipeline of a worker of NewMemWorker released
// (sent or freed) since the last ReleaseSent: its frames' addresses.
func (w *Worker) Released() []uint64 { return w.tx.rel }

// FrameHeld reports whether the frame at address a is held by the
// pipeline (handed to it, or allocated by it, and not released).
func (w *Worker) FrameHeld(a uint64) bool { return w.refs.held[w.refs.idx(a)] }

// FramesHeld is how many frames the pipeline holds.
func (w *Worker) FramesHeld() int {
	n := 0
	for _, h := range w.refs.held {
		if h {
			n++
		}
	}
	return n
}
