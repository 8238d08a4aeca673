package xdp

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Desc is one RX or TX ring descriptor; it has the layout of struct xdp_desc.
// Addr is an offset into the UMEM (of the packet data, not of the frame start),
// Len the packet length, Options is 0 or XDP_PKT_CONTD: on a UMEM whose frames
// span several kernel buffers (MultiBuffer) a packet longer than one buffer
// is a chain of descriptors, each but the last with XDP_PKT_CONTD (Continued).
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// UmemConfig sizes a UMEM. Zero fields take the defaults.
type UmemConfig struct {
	// FrameSize is the size of one frame: a power of two from 2048 to
	// 65536. Default 4096. The largest packet a frame holds is FrameSize -
	// Headroom - 256 (XDP_PACKET_HEADROOM). The kernel takes buffers
	// (chunks) of at most a page: a larger frame is registered as chunks of
	// a page, and the UMEM is MultiBuffer (see there).
	FrameSize uint32
	// FrameCount is the number of frames. Default 4096.
	FrameCount uint32
	// Headroom is extra space the kernel leaves in front of every received
	// packet, in addition to XDP_PACKET_HEADROOM (256). Default 0.
	Headroom uint32
}

const (
	DefaultFrameSize  = 4096
	DefaultFrameCount = 4096
	// MinFrameSize and MaxFrameSize bound UmemConfig.FrameSize.
	MinFrameSize = 2048
	MaxFrameSize = 65536
)

// Umem is a packet buffer area shared between this process and the kernel,
// divided into fixed-size frames addressed by their byte offset. One Umem can
// back several sockets (one per interface queue); the first socket opened
// registers it with the kernel (XDP_UMEM_REG), later ones bind with
// XDP_SHARED_UMEM and their own fill and completion rings.
//
// The accessors (Bytes, Frame, FrameBase, ...) are safe for concurrent use;
// Open and Close are serialised internally.
type Umem struct {
	area       []byte
	frameSize  uint32
	chunkSize  uint32 // the kernel's buffer: min(frameSize, page)
	frameCount uint32
	headroom   uint32
	frameShift uint32

	mu         sync.Mutex
	socks      []*Socket // live, bound sockets using this UMEM
	needWakeup bool      // the registering socket bound with XDP_USE_NEED_WAKEUP
	closed     bool
}

// NewUmem maps an anonymous area of FrameSize*FrameCount bytes. Nothing is
// registered with the kernel until the first Open.
func NewUmem(cfg UmemConfig) (*Umem, error) {
	if cfg.FrameSize == 0 {
		cfg.FrameSize = DefaultFrameSize
	}
	if cfg.FrameCount == 0 {
		cfg.FrameCount = DefaultFrameCount
	}
	if cfg.FrameSize < MinFrameSize || cfg.FrameSize > MaxFrameSize || cfg.FrameSize&(cfg.FrameSize-1) != 0 {
		return nil, fmt.Errorf("xdp: UMEM frame size %d not supported (use a power of two from %d to %d)", cfg.FrameSize, MinFrameSize, MaxFrameSize)
	}
	chunk := min(cfg.FrameSize, uint32(os.Getpagesize()))
	if cfg.Headroom+unix.XDP_PACKET_HEADROOM+64 > chunk {
		return nil, fmt.Errorf("xdp: UMEM headroom %d leaves no room for a packet in a %d-byte buffer", cfg.Headroom, chunk)
	}
	size := uint64(cfg.FrameSize) * uint64(cfg.FrameCount)
	if size > 1<<40 {
		return nil, fmt.Errorf("xdp: UMEM of %d frames of %d bytes is too large", cfg.FrameCount, cfg.FrameSize)
	}
	area, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("xdp: mmap UMEM of %d bytes: %w (reduce FrameCount or check memory limits)", size, err)
	}
	shift := uint32(bits.TrailingZeros32(cfg.FrameSize))
	return &Umem{
		area: area, frameSize: cfg.FrameSize, chunkSize: chunk, frameCount: cfg.FrameCount,
		headroom: cfg.Headroom, frameShift: shift,
	}, nil
}

// FrameSize is the size of one frame in bytes.
func (u *Umem) FrameSize() uint32 { return u.frameSize }

// FrameCount is the number of frames.
func (u *Umem) FrameCount() uint32 { return u.frameCount }

// Headroom is the configured user headroom.
func (u *Umem) Headroom() uint32 { return u.headroom }

// DataOffset is where the kernel places a received packet inside its frame:
// Headroom + XDP_PACKET_HEADROOM. Using the same offset for frames built for TX
// keeps received and locally built frames alike.
func (u *Umem) DataOffset() uint32 { return u.headroom + unix.XDP_PACKET_HEADROOM }

// MaxFrameLen is the longest packet a frame can receive: FrameSize - DataOffset.
func (u *Umem) MaxFrameLen() uint32 { return u.frameSize - u.DataOffset() }

// FrameAddr returns the base address of frame i (0 <= i < FrameCount).
func (u *Umem) FrameAddr(i int) uint64 { return uint64(i) << u.frameShift }

// FrameBase returns the base address of the frame that contains addr. Use it to
// turn an RX or completion address back into the frame to put on a fill ring or
// free list (the fill ring also accepts any address inside a frame).
func (u *Umem) FrameBase(addr uint64) uint64 { return addr &^ uint64(u.frameSize-1) }

// FrameIndex returns the index of the frame that contains addr.
func (u *Umem) FrameIndex(addr uint64) int { return int(addr >> u.frameShift) }

// Bytes returns the n bytes at addr as a slice into the UMEM (no copy). It
// returns nil if the range is outside the UMEM. The slice aliases memory that
// the kernel writes while the frame is on a fill or RX ring and reads while it
// is on a TX ring: only touch frames you own.
func (u *Umem) Bytes(addr uint64, n uint32) []byte {
	end := addr + uint64(n)
	if end > uint64(len(u.area)) || end < addr {
		return nil
	}
	return u.area[addr:end:end]
}

// Frame returns the bytes from addr to the end of its frame: the room available
// to build or grow a packet that starts at addr. nil if addr is outside the UMEM.
func (u *Umem) Frame(addr uint64) []byte {
	if addr >= uint64(len(u.area)) {
		return nil
	}
	end := u.FrameBase(addr) + uint64(u.frameSize)
	return u.area[addr:end:end]
}

// NewFreeList returns a FreeList holding the base address of every frame, with
// capacity FrameCount, so frames popped from it can be pushed back.
func (u *Umem) NewFreeList() *FreeList {
	f := NewFreeList(int(u.frameCount))
	for i := int(u.frameCount) - 1; i >= 0; i-- {
		f.Push(u.FrameAddr(i))
	}
	return f
}

// Sockets returns the sockets currently open on this UMEM.
func (u *Umem) Sockets() []*Socket {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*Socket(nil), u.socks...)
}

// Close closes every socket still open on the UMEM and unmaps the area. Frames
// obtained from Bytes or Frame must not be used afterwards. Idempotent.
func (u *Umem) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	socks := append([]*Socket(nil), u.socks...)
	u.mu.Unlock()

	var errs []error
	for _, s := range socks {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unix.Munmap(u.area); err != nil {
		errs = append(errs, fmt.Errorf("xdp: munmap UMEM: %w", err))
	}
	u.area = nil
	return errors.Join(errs...)
}
