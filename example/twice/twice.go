// Package twice is the smallest link mechanism, the example of how one is
// written (docs/extending.md): every host frame crosses the link twice as a
// data frame with a sequence number, and the receiving end passes the first
// copy to its host. A link losing frames at rate p loses p² of them, for
// twice the bytes. It registers mode "twice" from init, uses only the
// engine's exported API, and keeps its logic in Window (window.go).
package twice

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/xdp"
)

// Mode is the mode's name: linkfabric run --mode twice.
const Mode dataplane.Mode = "twice"

func init() {
	dataplane.Register(Mode, dataplane.Spec{
		Hosts: [2]int{1, 1}, Links: [2]int{1, 1},
		Wire:     true, // link frames carry the link header: sealed and checked
		CheckMTU: checkMTU,
		New: func(*dataplane.Dataplane, *dataplane.Config) (dataplane.Instance, error) {
			return &instance{}, nil
		},
	})
}

// checkMTU refuses a link port that cannot carry a full host frame with the
// link header and the integrity trailer.
func checkMTU(c *dataplane.Config, hostMTU, linkMTU int, ip, where string) error {
	if over := c.LinkOverhead(); linkMTU < hostMTU+over {
		return fmt.Errorf("twice: link port %s (%s) has MTU %d, below host port %s's MTU %d + %d bytes of link header and trailer; fix: %s link set dev %s mtu %d (on both switches' link ports), or lower the hosts' MTU",
			c.LinkPort, where, linkMTU, c.HostPort, hostMTU, over, ip, c.LinkPort, hostMTU+over)
	}
	return nil
}

// Stats are the mode's counters ("twice" in /stats.json).
type Stats struct {
	Sent       atomic.Uint64 // host frames sent, each twice
	Delivered  atomic.Uint64 // link frames passed to the host (first copies)
	Duplicates atomic.Uint64 // second copies dropped
	Bad        atomic.Uint64 // link frames that were not data frames, or host frames that could not be sent
}

// instance is the mode on one dataplane: its one worker's pipeline and counters.
type instance struct{ st Stats }

func (in *instance) Pipeline(w *dataplane.Worker) (dataplane.Pipeline, error) {
	ps := w.Node().Ports()
	// A random first sequence number: a restarted sender's frames fall
	// outside the receiver's window instead of in it, as duplicates.
	return &pipeline{w: w, host: ps.Host, link: ps.Links[0], next: seqhdr.Seq(rand.Uint32N(seqhdr.Space)), st: &in.st}, nil
}

func (in *instance) Stats() map[string]any {
	return map[string]any{"twice": map[string]uint64{"sent": in.st.Sent.Load(), "delivered": in.st.Delivered.Load(),
		"duplicates": in.st.Duplicates.Load(), "bad": in.st.Bad.Load()}}
}

func (in *instance) Register(r *metrics.Registry) error {
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"linkfabric_twice_sent_frames_total", "host frames sent twice over the link", &in.st.Sent},
		{"linkfabric_twice_delivered_frames_total", "link frames passed to the host (first copies)", &in.st.Delivered},
		{"linkfabric_twice_duplicate_frames_total", "second copies dropped", &in.st.Duplicates},
		{"linkfabric_twice_bad_frames_total", "frames dropped: not a data frame, or no buffer to send", &in.st.Bad},
	} {
		if err := r.Counter(c.name, c.help, c.v); err != nil {
			return err
		}
	}
	return nil
}

func (in *instance) Close() {}

// pipeline is the worker's half of the mode.
type pipeline struct {
	w          *dataplane.Worker
	host, link int
	next       seqhdr.Seq // the sequence number of the next host frame
	win        Window     // the copies received
	st         *Stats
}

func (p *pipeline) Room(int) int { return math.MaxInt }

func (p *pipeline) Receive(_ int64, port, _ int, descs []xdp.Desc, tx *dataplane.Tx) {
	if port == p.host {
		p.send(descs, tx)
	} else {
		p.deliver(descs, tx)
	}
}

// send builds each host frame's data frame in a new buffer and sends it
// twice (the engine frees the buffer once both copies have left).
func (p *pipeline) send(descs []xdp.Desc, tx *dataplane.Tx) {
	var sent, bad uint64
	for _, d := range descs {
		n := int(d.Len)
		a, ok := tx.Alloc()
		if !ok || n+seqhdr.MaxOverhead > p.w.FrameLen() {
			bad++
			tx.Release(d.Addr)
			if ok {
				tx.Release(a)
			}
			continue
		}
		b := p.w.Bytes(a, n+seqhdr.MaxOverhead)
		copy(b[seqhdr.MaxOverhead:], p.w.Bytes(d.Addr, n))
		h := seqhdr.Header{Type: seqhdr.TypeData, Seq: p.next}
		if _, m, err := seqhdr.Insert(b, seqhdr.MaxOverhead, n, &h); err != nil {
			bad++ // too short, or already a link frame: a host must not send those
		} else {
			p.next = p.next.Next()
			tx.Send(p.link, dataplane.LaneData, a, m)
			tx.Send(p.link, dataplane.LaneData, a, m)
			sent++
		}
		tx.Release(a)
		tx.Release(d.Addr)
	}
	p.st.Sent.Add(sent)
	p.st.Bad.Add(bad)
}

// deliver strips the link header of each first copy in place and passes the
// frame to the host; second copies and anything else are dropped.
func (p *pipeline) deliver(descs []xdp.Desc, tx *dataplane.Tx) {
	var delivered, dups, bad uint64
	for _, d := range descs {
		h, off, n, err := seqhdr.Strip(p.w.Bytes(d.Addr, int(d.Len)), 0, int(d.Len))
		switch {
		case err != nil:
			bad++
		case !p.win.First(h.Seq):
			dups++
		default:
			tx.Send(p.host, dataplane.LaneData, d.Addr+uint64(off), n)
			delivered++
		}
		tx.Release(d.Addr)
	}
	p.st.Delivered.Add(delivered)
	p.st.Duplicates.Add(dups)
	p.st.Bad.Add(bad)
}

func (p *pipeline) Poll(int64, *dataplane.Tx) int64 { return math.MaxInt64 }

func (p *pipeline) Stop() {}
