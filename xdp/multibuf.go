package xdp

import "golang.org/x/sys/unix"

// Multi-buffer frames (jumbo frames).
//
// The kernel takes UMEM buffers (chunks) of at most a page: XDP_UMEM_REG
// refuses a larger chunk size with EINVAL (measured on Linux 6.18 with 8 and
// 16 KiB chunks, on ordinary and on HugeTLB memory). A frame longer than a
// chunk less its headroom (3840 bytes with 4 KiB pages) therefore needs
// AF_XDP multi-buffer (XDP_USE_SG, Linux 6.6+): a received packet arrives as
// a chain of descriptors, one per chunk, all but the last flagged
// XDP_PKT_CONTD; a packet to transmit is given the same way, and the kernel
// builds one frame of the chain (in copy mode one skb with page fragments).
//
// A Umem whose FrameSize exceeds the page is registered with page-sized
// chunks and every socket on it binds with XDP_USE_SG (MultiBuffer). Its
// frames are FrameSize-byte slots: FrameAddr, FrameBase, FrameIndex and the
// free list count slots, and the kernel only ever gets a slot's base on a
// fill ring, so it writes into the slot's first chunk. The rest of the slot
// is the caller's: a receiver that wants the whole packet in one place
// copies the continuation buffers (each in the first chunk of another slot)
// behind the first one, which leaves the packet contiguous in its slot;
// TxChain cuts a contiguous packet back into the chain the kernel wants.
// Every descriptor of a transmitted chain comes back on the completion ring
// by itself, each an address inside the same slot.

// Continued reports whether the packet goes on in the next descriptor
// (XDP_PKT_CONTD: a multi-buffer chain, MultiBuffer UMEMs only).
func (d Desc) Continued() bool { return d.Options&unix.XDP_PKT_CONTD != 0 }

// ChunkSize is the size of the kernel's buffers: min(FrameSize, page size).
func (u *Umem) ChunkSize() uint32 { return u.chunkSize }

// MultiBuffer reports whether a frame spans several kernel buffers
// (FrameSize larger than a page): sockets bind with XDP_USE_SG, packets
// longer than MaxRxLen are received as chains, and TxChain cuts longer
// packets into chains for transmission.
func (u *Umem) MultiBuffer() bool { return u.frameSize > u.chunkSize }

// MaxRxLen is the longest packet the kernel writes into one buffer: the
// chunk less DataOffset. A longer one is a chain (MultiBuffer) or dropped.
func (u *Umem) MaxRxLen() uint32 { return u.chunkSize - u.DataOffset() }

// MaxChain is the most descriptors TxChain makes of one frame.
func (u *Umem) MaxChain() int {
	return int((u.frameSize + u.chunkSize - 1 - u.DataOffset()) / u.chunkSize)
}

// TxChain appends to out the descriptors that transmit the packet of n bytes
// at addr, contiguous in its frame: one descriptor when it lies within one
// chunk, otherwise one per chunk it touches, each but the last flagged
// XDP_PKT_CONTD. Without MultiBuffer it is always the one descriptor.
func (u *Umem) TxChain(out []Desc, addr uint64, n uint32) []Desc {
	mask := uint64(u.chunkSize - 1)
	for {
		room := u.chunkSize - uint32(addr&mask)
		if n <= room {
			return append(out, Desc{Addr: addr, Len: n})
		}
		out = append(out, Desc{Addr: addr, Len: room, Options: unix.XDP_PKT_CONTD})
		addr += uint64(room)
		n -= room
	}
}
