package wire

import (
	"encoding/binary"
	"fmt"
)

// Report message layout: magic "TR", version, host, round, seq, count, then
// count × (queued, rxFree), then the counters; big-endian.
const (
	ReportMagic   = 0x5452
	ReportVersion = 1
	reportHdrLen  = 14
	reportCtrLen  = 6 * 8
)

// Report is a host's demand report (host → FM, UDP, once a round): per
// destination the bytes queued and the receive buffer free for it, and the
// host's counters.
type Report struct {
	Host   uint16
	Round  uint32
	Seq    uint32
	N      uint8
	Queued [MaxHosts]uint64 // bytes waiting per destination
	RxFree [MaxHosts]uint64 // receive buffer free per source
	Counters
}

// Counters are the gate's running totals carried in every report.
type Counters struct {
	CtlRx, CtlLost, GrantsLate, OverrunBytes, FreeRunOpens, LeaseExpiries uint64
}

// LostWindows is the windows the host has lost: the grants it found
// missing (gaps in the FM's sequence numbers), less the free-run windows it
// opened without one.
func (c *Counters) LostWindows() int64 {
	return max(0, int64(c.CtlLost)-int64(c.FreeRunOpens))
}

// Len is the encoded length.
func (r *Report) Len() int { return reportHdrLen + 16*int(r.N) + reportCtrLen }

// Encode writes r into b and returns its length.
func (r *Report) Encode(b []byte) (int, error) {
	if r.N > MaxHosts {
		return 0, fmt.Errorf("%w: report of %d hosts (max %d)", ErrRange, r.N, MaxHosts)
	}
	n := r.Len()
	if err := putHead(b, "report", n, ReportMagic, ReportVersion); err != nil {
		return 0, err
	}
	be := binary.BigEndian
	be.PutUint16(b[3:], r.Host)
	be.PutUint32(b[5:], r.Round)
	be.PutUint32(b[9:], r.Seq)
	b[13] = r.N
	p := reportHdrLen
	for i := 0; i < int(r.N); i++ {
		be.PutUint64(b[p:], r.Queued[i])
		be.PutUint64(b[p+8:], r.RxFree[i])
		p += 16
	}
	for _, v := range [...]uint64{r.CtlRx, r.CtlLost, r.GrantsLate, r.OverrunBytes, r.FreeRunOpens, r.LeaseExpiries} {
		be.PutUint64(b[p:], v)
		p += 8
	}
	return n, nil
}

// DecodeReport parses b into r; entries beyond N are zero.
func DecodeReport(b []byte, r *Report) error {
	if err := checkHead(b, "report", reportHdrLen, ReportMagic, ReportVersion); err != nil {
		return err
	}
	be := binary.BigEndian
	*r = Report{Host: be.Uint16(b[3:]), Round: be.Uint32(b[5:]), Seq: be.Uint32(b[9:]), N: b[13]}
	if r.N > MaxHosts {
		return fmt.Errorf("%w: report of %d hosts (max %d)", ErrRange, r.N, MaxHosts)
	}
	if len(b) < r.Len() {
		return fmt.Errorf("%w: report of %d bytes, its count needs %d", ErrShort, len(b), r.Len())
	}
	p := reportHdrLen
	for i := 0; i < int(r.N); i++ {
		r.Queued[i] = be.Uint64(b[p:])
		r.RxFree[i] = be.Uint64(b[p+8:])
		p += 16
	}
	for _, v := range [...]*uint64{&r.CtlRx, &r.CtlLost, &r.GrantsLate, &r.OverrunBytes, &r.FreeRunOpens, &r.LeaseExpiries} {
		*v = be.Uint64(b[p:])
		p += 8
	}
	return nil
}
