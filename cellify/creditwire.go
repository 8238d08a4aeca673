package cellify

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// CREDIT-REQ (type 10, source edge → destination edge) and CREDIT-GRANT
// (type 11, destination → source) share one layout after the link header:
//
//	22  2  src edge (the VOQs' edge; nonzero)
//	24  2  dst edge (the egress edge; nonzero)
//	26  1  count of entries, 1..MaxCreditEntries
//	27  1  reserved, zero
//	28  2  src epoch: the source edge's per-boot nonce (0: none)
//	30  2  dst epoch: the destination's session nonce with the source,
//	       drawn when it first grants it and whenever it restarts the
//	       source's totals (0: none, or not known yet)
//	32  4  lead: the sender's standing pre-credit per VOQ, bytes
//	       (--cells-pre-credit)
//	36  4  ahead: what the sender's requests name beyond their backlog,
//	       bytes (--cells-credit-ahead)
//	40  4  CRC-32C over bytes 22..39 and the entries
//	44  -  count × 10-byte entries: port 1, class 1, total 8
//
// Total is cumulative: in a request the bytes ever enqueued on VOQ (dst,
// port, class), in a grant the bytes ever granted to it. A lost or repeated
// frame is thus repaired by the next. The totals count from the start of
// the session the two epochs name: a request carries its sender's epoch
// and the session nonce last heard, a grant both as the destination knows
// them, so that neither end takes a total from before the other restarted.
// Lead and ahead are the sender's credit settings, which the two edges of a
// VOQ must share (the destination's scheduler counts the source's lead and
// ahead in its credit in flight): each edge compares its peers' with its
// own (Node.SettingsDiffer).
// Frames shorter than seqhdr.MinFrameLen are zero-padded.

// Credit frame sizes.
const (
	creditHeadLen    = 22
	creditSumAt      = creditHeadLen - 4 // the CRC-32C, over the header before it and the entries
	CreditEntryLen   = 10
	MaxCreditEntries = 128 // 1324 bytes: fits a 1500-byte link MTU
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CreditEntry is one VOQ's cumulative counter.
type CreditEntry struct {
	Port  uint8
	Class Class
	Total uint64
}

// CreditFrame is a decoded CREDIT-REQ or CREDIT-GRANT; its entries stay in
// the frame it was parsed from.
type CreditFrame struct {
	Grant    bool
	Src, Dst EdgeID
	Epochs   CreditEpochs
	Settings CreditSettings
	N        int // entries
	entries  []byte
}

// CreditEpochs are a credit frame's source edge's per-boot nonce and its
// destination's session nonce with it (0: none, or not known yet).
type CreditEpochs struct {
	Src, Dst uint16
}

// CreditSettings are the credit settings of a credit frame's sender, which
// the two edges of a VOQ must share.
type CreditSettings struct {
	Lead  uint32 // bytes a VOQ sends beyond its grant (--cells-pre-credit)
	Ahead uint32 // bytes a request names beyond the backlog (--cells-credit-ahead)
}

// Entry returns entry i (0 ≤ i < N).
func (c *CreditFrame) Entry(i int) CreditEntry {
	e := c.entries[i*CreditEntryLen:]
	return CreditEntry{Port: e[0], Class: Class(e[1]), Total: binary.BigEndian.Uint64(e[2:])}
}

// CreditFrameLen is the length of a credit frame with n entries.
func CreditFrameLen(n int) int {
	return max(Off+creditHeadLen+n*CreditEntryLen, seqhdr.MinFrameLen)
}

// PutCredit writes a whole credit frame without epochs and settings but its
// MACs and returns its length.
func PutCredit(frame []byte, grant bool, src, dst EdgeID, entries []CreditEntry) (int, error) {
	return PutCreditEpochs(frame, grant, src, dst, CreditEpochs{}, CreditSettings{}, entries)
}

// PutCreditEpochs writes a whole credit frame but its MACs and returns its
// length.
func PutCreditEpochs(frame []byte, grant bool, src, dst EdgeID, ep CreditEpochs, set CreditSettings, entries []CreditEntry) (int, error) {
	n := len(entries)
	if src == 0 || dst == 0 {
		return 0, ErrEdge
	}
	if n == 0 || n > MaxCreditEntries {
		return 0, ErrField
	}
	if len(frame) < CreditFrameLen(n) {
		return 0, ErrShort
	}
	t := seqhdr.TypeCreditReq
	if grant {
		t = seqhdr.TypeCreditGrant
	}
	putLink(frame, t)
	b := frame[Off:]
	binary.BigEndian.PutUint16(b[0:], uint16(src))
	binary.BigEndian.PutUint16(b[2:], uint16(dst))
	b[4] = byte(n)
	b[5] = 0
	binary.BigEndian.PutUint16(b[6:], ep.Src)
	binary.BigEndian.PutUint16(b[8:], ep.Dst)
	binary.BigEndian.PutUint32(b[10:], set.Lead)
	binary.BigEndian.PutUint32(b[14:], set.Ahead)
	for i := range entries {
		e := &entries[i]
		if e.Class >= Classes {
			return 0, ErrClass
		}
		p := b[creditHeadLen+i*CreditEntryLen:]
		p[0] = e.Port
		p[1] = byte(e.Class)
		binary.BigEndian.PutUint64(p[2:], e.Total)
	}
	end := creditHeadLen + n*CreditEntryLen
	binary.BigEndian.PutUint32(b[creditSumAt:], sum2(b[:creditSumAt], b[creditHeadLen:end]))
	return pad(frame, Off+end), nil
}

// ParseCredit decodes a CREDIT-REQ or CREDIT-GRANT frame.
func ParseCredit(frame []byte) (CreditFrame, error) {
	var c CreditFrame
	t, ok := seqhdr.FrameType(frame)
	if !ok || (t != seqhdr.TypeCreditReq && t != seqhdr.TypeCreditGrant) {
		return c, ErrType
	}
	if len(frame) < Off+creditHeadLen {
		return c, ErrShort
	}
	b := frame[Off:]
	n := int(b[4])
	if n == 0 || n > MaxCreditEntries || b[5] != 0 {
		return c, ErrField
	}
	end := creditHeadLen + n*CreditEntryLen
	if len(b) < end {
		return c, ErrShort
	}
	if sum2(b[:creditSumAt], b[creditHeadLen:end]) != binary.BigEndian.Uint32(b[creditSumAt:]) {
		return c, ErrChecksum
	}
	c.Grant = t == seqhdr.TypeCreditGrant
	c.Src = EdgeID(binary.BigEndian.Uint16(b[0:]))
	c.Dst = EdgeID(binary.BigEndian.Uint16(b[2:]))
	c.Epochs = CreditEpochs{Src: binary.BigEndian.Uint16(b[6:]), Dst: binary.BigEndian.Uint16(b[8:])}
	c.Settings = CreditSettings{Lead: binary.BigEndian.Uint32(b[10:]), Ahead: binary.BigEndian.Uint32(b[14:])}
	if c.Src == 0 || c.Dst == 0 {
		return CreditFrame{}, ErrEdge
	}
	c.N = n
	c.entries = b[creditHeadLen:end]
	for i := range n {
		if Class(c.entries[i*CreditEntryLen+1]) >= Classes {
			return CreditFrame{}, ErrClass
		}
	}
	return c, nil
}

// sum2 is the CRC-32C of a followed by b.
func sum2(a, b []byte) uint32 {
	return crc32.Update(crc32.Checksum(a, castagnoli), castagnoli, b)
}
