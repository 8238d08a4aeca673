package dataplane

import (
	"fmt"
	"net"

	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// Jumbo frames (MTUs above what a page-sized UMEM buffer holds, 3826 with 4
// KiB pages).
//
// The kernel's AF_XDP buffers are at most a page, so a frame longer than
// 3840 bytes reaches an AF_XDP socket only through multi-buffer
// (XDP_USE_SG): as a chain of descriptors, one per buffer, each but the
// last flagged XDP_PKT_CONTD (package xdp, multibuf.go). Every pipeline
// here works on whole frames (lg inserts a header in front and a trailer
// behind, checks a CRC over the frame, keeps it for retransmission; cells
// cut it; fec codes it), so the worker hands them whole frames only:
//
//   - The UMEM's frames are slots of FrameSize bytes (16 KiB for MTU 9000),
//     registered with the kernel as page-sized chunks; only a slot's base
//     goes on a fill ring, so the kernel writes into its first chunk.
//   - gather (receive): the first descriptor of a chain stays where it is;
//     each continuation (in the first chunk of another slot) is copied
//     behind it, in the rest of its slot, and its slot freed at once. So a
//     9014-byte frame costs one copy of 5174 bytes here, on top of the
//     kernel's copy into the UMEM (copy mode). A chain longer than its slot
//     is dropped whole (RX.Dropped).
//   - placeChains (transmit, in place): a frame is cut into the chain of chunks it
//     spans (xdp.Umem.TxChain), placed whole or not at all; every
//     descriptor of it is counted outstanding and comes back on the
//     completion ring by itself, so frameRefs frees the slot after the last.
//
// Tx.Space counts a lane's room in frames of the longest chain the ports
// can need (maxChain), so a pipeline never queues more than the TX ring
// takes.
//
// The alternative, a UMEM frame as large as the MTU (one descriptor per
// frame), is not possible: XDP_UMEM_REG refuses chunks above a page
// (measured on Linux 6.18: 8 and 16 KiB chunks give EINVAL, with ordinary
// and with HugeTLB memory).

// chainRx is a receive lane's chain in progress (it may span batches).
type chainRx struct {
	head xdp.Desc // the first descriptor, grown by what was copied behind it
	open bool     // a chain has begun and not ended
	over bool     // longer than a slot: dropped when it ends
}

// gather makes every chain in descs (received on port, all held) one
// descriptor of the whole frame, in place, and returns the frames complete
// so far; an unfinished chain waits in c for the next batch.
func (w *Worker) gather(c *chainRx, port int, descs []xdp.Desc) []xdp.Desc {
	out := descs[:0]
	for _, d := range descs {
		if !c.open {
			if !d.Continued() {
				out = append(out, d)
				continue
			}
			c.head, c.open, c.over = d, true, false
			continue
		}
		if !c.over {
			room := w.umem.Frame(c.head.Addr)
			if uint64(len(room)) >= uint64(c.head.Len)+uint64(d.Len) {
				copy(room[c.head.Len:], w.umem.Bytes(d.Addr, d.Len))
				c.head.Len += d.Len
			} else {
				c.over = true
			}
		}
		w.refs.release(d.Addr) // the continuation's slot is free again
		if d.Continued() {
			continue
		}
		c.open = false
		if c.over {
			w.refs.release(c.head.Addr)
			w.counters[port].RX.Dropped.Add(1)
			continue
		}
		c.head.Options = 0
		out = append(out, c.head)
	}
	return out
}

// placeChains puts list on k's TX ring for place on a multi-buffer UMEM:
// each frame as the chain of chunks it spans, whole or not at all, up to
// the first that does not fit; it returns how many frames it placed and
// their bytes. A frame counted already (a shaper's) was counted once: its
// chain's other descriptors are counted here.
func (w *Worker) placeChains(k lane, list []xdp.Desc, counted bool) (n int, bytes uint64) {
	free := k.s.TxFree()
	out := w.chain[:0]
	for _, d := range list {
		before := len(out)
		out = w.umem.TxChain(out, d.Addr, d.Len)
		if len(out) > free {
			out = out[:before]
			break
		}
		extra := len(out) - before
		if counted {
			extra--
		}
		for range extra {
			w.refs.sent(d.Addr)
		}
		n++
		bytes += uint64(d.Len)
	}
	k.s.Transmit(out) // fits: at most TxFree descriptors
	return n, bytes
}

// txFrames is how many frames s's TX ring surely takes: its free
// descriptors, divided by maxChain on a multi-buffer UMEM.
func (w *Worker) txFrames(s *xdp.Socket) int {
	if w.maxChain > 1 {
		return s.TxFree() / w.maxChain
	}
	return s.TxFree()
}

// fitFrameSize is the UMEM frame size for ports of MTUs up to maxMTU: 4096
// (one page, one descriptor per frame) while a frame of maxMTU with its
// Ethernet header fits after the kernel's headroom (a link port's MTU
// includes its link header and trailer: checkMTU), else the smallest power
// of two that holds it (multi-buffer).
func fitFrameSize(maxMTU int) uint32 {
	need := maxMTU + EthHeaderLen + unix.XDP_PACKET_HEADROOM
	size := uint32(4096)
	for int(size) < need && size < xdp.MaxFrameSize {
		size <<= 1
	}
	return size
}

// PortsMaxMTU is the largest MTU of the ports named (in the calling
// thread's network namespace); ports it cannot find are left to New's
// errors (0 if none is found).
func PortsMaxMTU(names []string) int {
	m := 0
	for _, n := range names {
		if ifc, err := net.InterfaceByName(n); err == nil {
			m = max(m, ifc.MTU)
		}
	}
	return m
}

// chainLen is how many descriptors a frame of n bytes at the UMEM's data
// offset takes (1 without multi-buffer).
func chainLen(u *xdp.Umem, n int) int {
	first := int(u.MaxRxLen())
	if n <= first {
		return 1
	}
	c := int(u.ChunkSize())
	return 1 + (n-first+c-1)/c
}

// checkFrameSize checks an explicit --frame-size.
func checkFrameSize(size uint32) error {
	if size < xdp.MinFrameSize || size > xdp.MaxFrameSize || size&(size-1) != 0 {
		return fmt.Errorf("dataplane: --frame-size %d: want a power of two from %d to %d, or 0 for what the ports' MTU needs (4096 up to MTU %d, 16384 at MTU 9000)",
			size, xdp.MinFrameSize, xdp.MaxFrameSize, 4096-unix.XDP_PACKET_HEADROOM-EthHeaderLen)
	}
	return nil
}
