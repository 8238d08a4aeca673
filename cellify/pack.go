package cellify

import "encoding/binary"

// DefaultRingBytes is a Packer's default buffer: 256 KiB of records.
const DefaultRingBytes = 256 << 10

// Packer is the packing side of one VOQ: host frames become records
// [length 2][frame] in a bounded byte ring, and Cut cuts that byte stream into
// cells. Cells carry the stream's cell seq (from 0, +1 per cell), the offset
// of the first record starting in them and the number of the record their
// first byte belongs to. It does not allocate after NewPacker.
type Packer struct {
	hdr     CellHeader // Dst, Src, Port, Class, Hops of every cell
	packing bool

	ring   []byte
	head   int    // ring index of the next byte to cut
	used   int    // bytes in the ring
	left   int    // bytes of the record at head not yet cut; 0: head is at a record start
	recNo  uint16 // number of the record at head (the next one when left is 0)
	seq    uint32 // seq of the next cell
	enq    uint64 // bytes ever enqueued (records, length prefix included)
	sent   uint64 // bytes ever cut into cells
	frames uint64 // records ever enqueued
}

// NewPacker returns the packer of VOQ key at edge src. ringBytes bounds the
// buffered records (DefaultRingBytes if 0, at least one largest record);
// hops (1..MaxHops) is the hop budget of its cells. With packing off each
// record is cut into cells of its own.
func NewPacker(src EdgeID, key VOQKey, ringBytes int, hops uint8, packing bool) (*Packer, error) {
	h := CellHeader{Dst: key.Dst, Src: src, Port: key.Port, Class: key.Class, Hops: hops, Len: 1, First: NoRecord}
	if err := h.check(); err != nil {
		return nil, err
	}
	if ringBytes == 0 {
		ringBytes = DefaultRingBytes
	}
	ringBytes = max(ringBytes, RecordHeaderLen+MaxRecordFrame)
	return &Packer{hdr: h, packing: packing, ring: make([]byte, ringBytes)}, nil
}

// Enqueue appends frame as one record. It refuses (false) a frame shorter
// than MinRecordFrame or longer than MaxRecordFrame, or one that does not fit
// the ring: the caller counts it.
func (p *Packer) Enqueue(frame []byte) bool { return p.EnqueueParts(nil, frame) }

// EnqueueParts appends one record whose frame is head followed by frame
// (e.g. a tag of the caller's before a host frame), under Enqueue's bounds.
func (p *Packer) EnqueueParts(head, frame []byte) bool {
	n := len(head) + len(frame)
	if n < MinRecordFrame || n > MaxRecordFrame || RecordHeaderLen+n > len(p.ring)-p.used {
		return false
	}
	var lb [RecordHeaderLen]byte
	binary.BigEndian.PutUint16(lb[:], uint16(n))
	tail := p.wrap(p.head + p.used)
	tail = p.put(tail, lb[:])
	tail = p.put(tail, head)
	p.put(tail, frame)
	p.used += RecordHeaderLen + n
	p.enq += uint64(RecordHeaderLen + n)
	p.frames++
	return true
}

// Backlog is the number of stream bytes (records with their length prefix)
// waiting to be cut.
func (p *Packer) Backlog() int { return p.used }

// Enqueued is the cumulative number of stream bytes ever enqueued: what a
// credit request carries.
func (p *Packer) Enqueued() uint64 { return p.enq }

// Sent is the cumulative number of stream bytes ever cut into cells.
func (p *Packer) Sent() uint64 { return p.sent }

// Frames is the number of records ever enqueued.
func (p *Packer) Frames() uint64 { return p.frames }

// NextSeq is the seq the next cell will carry.
func (p *Packer) NextSeq() uint32 { return p.seq }

// Cut writes the next cell into frame (all but the MACs) and returns the
// frame's length and the stream bytes it took (its payload length); 0, 0 when
// nothing is cut. The payload is at most budget, cellPayload and what frame
// holds after CellPayloadOffset; with packing off it also ends at the end of
// the current record. A grant is cut as one burst by calling Cut with the
// remaining budget until it returns 0: every cell but the last is full.
func (p *Packer) Cut(frame []byte, budget, cellPayload int) (n, took int) {
	take := min(p.used, budget, cellPayload, len(frame)-CellPayloadOffset, MaxCellPayload)
	if take <= 0 || len(frame) < CellFrameLen(0) {
		return 0, 0
	}
	h := p.hdr
	h.RecNo = p.recNo
	h.First = NoRecord
	left, recNo := p.left, p.recNo
	if !p.packing {
		if left == 0 {
			left = RecordHeaderLen + p.recLen(p.head)
			h.First = 0
		}
		take = min(take, left)
		left -= take
		if left == 0 {
			recNo++
		}
	} else {
		for pos := 0; pos < take; {
			if left == 0 {
				if h.First == NoRecord {
					h.First = uint16(pos)
				}
				left = RecordHeaderLen + p.recLen(p.wrap(p.head+pos))
			}
			step := min(left, take-pos)
			pos += step
			left -= step
			if left == 0 {
				recNo++
			}
		}
	}
	h.Seq = p.seq
	h.Len = uint16(take)
	if PutCellHeader(frame, &h) != nil {
		return 0, 0 // cannot happen: NewPacker checked the template
	}
	p.get(frame[CellPayloadOffset:CellPayloadOffset+take], p.head)
	p.head = p.wrap(p.head + take)
	p.used -= take
	if p.used == 0 {
		// Empty: the next record starts the ring again. Short messages,
		// each cut as it comes, then keep to its first bytes (the
		// cache's, and pages touched already) instead of going through
		// all of it, each page first touched on a frame's path.
		p.head = 0
	}
	p.left, p.recNo = left, recNo
	p.seq++
	p.sent += uint64(take)
	return pad(frame, CellPayloadOffset+take), take
}

// recLen reads the frame length of the record starting at ring index i.
func (p *Packer) recLen(i int) int {
	return int(p.ring[i])<<8 | int(p.ring[p.wrap(i+1)])
}

func (p *Packer) wrap(i int) int {
	if i >= len(p.ring) {
		i -= len(p.ring)
	}
	return i
}

// put copies b into the ring at index i and returns the index after it.
func (p *Packer) put(i int, b []byte) int {
	n := copy(p.ring[i:], b)
	copy(p.ring, b[n:])
	return p.wrap(i + len(b))
}

// get copies len(b) ring bytes from index i into b.
func (p *Packer) get(b []byte, i int) {
	n := copy(b, p.ring[i:])
	copy(b[n:], p.ring)
}
