package cellify

import (
	"encoding/binary"
	"math/bits"
)

// FlowHash returns a hash of an Ethernet frame's flow: the IPv4 or IPv6
// addresses and protocol, with the TCP/UDP/SCTP/DCCP ports when the frame
// carries them (not for fragments), else the MAC addresses and the
// ethertype. Up to two VLAN tags are skipped. seed decorrelates nodes. It
// reads only headers and never panics: a short or garbled frame hashes as
// much as it holds.
func FlowHash(frame []byte, seed uint64) uint64 {
	h, _ := flowHash(frame, seed)
	return h
}

// flowHash also returns how many leading bytes of f the hash depends on.
func flowHash(f []byte, seed uint64) (uint64, int) {
	h := fhAdd(seed, 0x5bd1e995)
	if len(f) < 14 {
		for _, b := range f {
			h = fhAdd(h, uint64(b))
		}
		return fhFinal(h ^ uint64(len(f))), len(f)
	}
	et := binary.BigEndian.Uint16(f[12:])
	off := 14
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88A8) && len(f) >= off+4; i++ {
		et = binary.BigEndian.Uint16(f[off+2:])
		off += 4
	}
	used := off
	switch {
	case et == 0x0800 && len(f) >= off+20:
		if f[off]>>4 == 4 {
			return fhIPv4(h, f, off)
		}
		used++ // the version byte was read
	case et == 0x86DD && len(f) >= off+40:
		if f[off]>>4 == 6 {
			return fhIPv6(h, f, off)
		}
		used++
	}
	h = fhAdd(h, uint64(binary.BigEndian.Uint16(f[0:]))<<32|uint64(binary.BigEndian.Uint32(f[2:])))
	h = fhAdd(h, uint64(binary.BigEndian.Uint16(f[6:]))<<32|uint64(binary.BigEndian.Uint32(f[8:])))
	h = fhAdd(h, uint64(et))
	return fhFinal(h), used
}

func fhIPv4(h uint64, f []byte, off int) (uint64, int) {
	proto := f[off+9]
	h = fhAdd(h, binary.BigEndian.Uint64(f[off+12:]))
	h = fhAdd(h, 4<<8|uint64(proto))
	used := off + 20
	ihl := int(f[off]&0x0f) * 4
	frag := binary.BigEndian.Uint16(f[off+6:])&0x3fff != 0 // MF or an offset
	if ihl >= 20 && !frag && fhPorts(proto) && len(f) >= off+ihl+4 {
		h = fhAdd(h, uint64(binary.BigEndian.Uint32(f[off+ihl:])))
		used = off + ihl + 4
	}
	return fhFinal(h), used
}

func fhIPv6(h uint64, f []byte, off int) (uint64, int) {
	for i := 8; i < 40; i += 8 {
		h = fhAdd(h, binary.BigEndian.Uint64(f[off+i:]))
	}
	nh := f[off+6]
	p := off + 40
	// Skip extension headers (hop-by-hop, routing, destination options,
	// AH); a fragment header or anything else ends the walk.
walk:
	for range 8 {
		if len(f) < p+2 {
			break
		}
		switch nh {
		case 0, 43, 60:
			nh, p = f[p], p+(int(f[p+1])+1)*8
		case 51:
			nh, p = f[p], p+(int(f[p+1])+2)*4
		default:
			break walk
		}
	}
	used := min(p, len(f)) // each header read lies before the next one
	h = fhAdd(h, 6<<8|uint64(nh))
	if fhPorts(nh) && len(f) >= p+4 {
		h = fhAdd(h, uint64(binary.BigEndian.Uint32(f[p:])))
		used = p + 4
	}
	return fhFinal(h), used
}

// fhPorts: TCP, UDP, DCCP, SCTP, UDP-Lite carry ports in their first 4 bytes.
func fhPorts(proto byte) bool {
	return proto == 6 || proto == 17 || proto == 33 || proto == 132 || proto == 136
}

func fhAdd(h, v uint64) uint64 {
	return bits.RotateLeft64(h^(v*0x87c37b91114253d5), 31) * 0x4cf5ad432745937f
}

// fhFinal is MurmurHash3's 64-bit finaliser.
func fhFinal(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb53a1c185e63
	h ^= h >> 33
	return h
}
