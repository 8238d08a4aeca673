// Package xdp is linkfabric's AF_XDP socket layer, written on
// golang.org/x/sys/unix only. It knows no protocol.
//
// A Umem is the packet buffer area, split into frames of 2048 bytes to 64
// KiB addressed by byte offset (frames larger than a page are multi-buffer:
// see multibuf.go). Sockets are opened on it per interface queue; the
// first registers the UMEM, the others share it (XDP_SHARED_UMEM) with their
// own fill and completion rings, so a frame received on one port can be
// transmitted on another without a copy.
//
// Frame ownership moves with the rings:
//
//	caller --Fill--> kernel --Receive--> caller --Transmit--> kernel --Complete--> caller
//
// Each Socket's data path (Fill, Receive, Transmit, Kick, Complete) is batch
// based, allocation free, lock free and for one goroutine. In copy mode (veth
// and drivers without zero-copy) one sendto sends at most 32 frames; Kick
// loops until the TX ring is drained or the kernel stops making progress.
//
// A two-port forwarder over one UMEM:
//
//	u, _ := xdp.NewUmem(xdp.UmemConfig{FrameSize: 2048, FrameCount: 8192})
//	defer u.Close()
//	a, _ := u.Open("eth0", 0, xdp.SocketConfig{})
//	b, _ := u.Open("eth1", 0, xdp.SocketConfig{})
//	// put a.FD() / b.FD() in the XSKMAP slot of queue 0 of each port's XDP program
//	free := u.NewFreeList()
//	addrs := make([]uint64, 2048)
//	for _, s := range []*xdp.Socket{a, b} {
//		s.Fill(addrs[:free.PopN(addrs[:2048])])
//	}
//	descs := make([]xdp.Desc, 64)
//	p := xdp.NewPoller(a, b)
//	for {
//		p.Wait(time.Millisecond)
//		for _, dir := range [][2]*xdp.Socket{{a, b}, {b, a}} {
//			in, out := dir[0], dir[1]
//			n := in.Receive(descs)
//			m := out.Transmit(descs[:n]) // same UMEM slots, no copy
//			for _, d := range descs[m:n] { // TX ring full: drop, recycle
//				addrs[0] = u.FrameBase(d.Addr)
//				in.Fill(addrs[:1])
//			}
//			out.Kick()
//			// frames sent on out were received on in: refill in's fill ring
//			k := out.Complete(addrs)
//			in.Fill(addrs[:k])
//		}
//	}
package xdp
