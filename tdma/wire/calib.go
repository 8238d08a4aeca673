package wire

import (
	"encoding/binary"
	"fmt"
)

// Calibration messages (UDP, class 7): the FM's echo request, the host's
// reply carrying its own receive and send times (so the host's wake-up is
// taken out of the round trip, as in RTnet's calibration), and the FM's
// resulting one-way delay estimate d_est for the host.
const (
	EchoMagic   = 0x5445 // "TE"
	CalibMagic  = 0x5443 // "TC"
	CalibVer    = 1
	EchoLen     = 36
	CalibMsgLen = 11
)

// Echo is a calibration echo: the FM fills Seq and FMSend; the host
// answers with the same message plus HostRx (its kernel receive time) and
// HostTx (its send time), both on the host's clock.
type Echo struct {
	Reply          bool
	Seq            uint32
	FMSend         int64
	HostRx, HostTx int64
}

// Encode writes e into b[:EchoLen].
func (e *Echo) Encode(b []byte) (int, error) {
	if len(b) < EchoLen {
		return 0, fmt.Errorf("%w: echo needs %d bytes, have %d", ErrShort, EchoLen, len(b))
	}
	be := binary.BigEndian
	be.PutUint16(b, EchoMagic)
	b[2] = CalibVer
	b[3] = 0
	if e.Reply {
		b[3] = 1
	}
	be.PutUint32(b[4:], e.Seq)
	be.PutUint64(b[8:], uint64(e.FMSend))
	be.PutUint64(b[16:], uint64(e.HostRx))
	be.PutUint64(b[24:], uint64(e.HostTx))
	be.PutUint32(b[32:], 0)
	return EchoLen, nil
}

// DecodeEcho parses b into e.
func DecodeEcho(b []byte, e *Echo) error {
	if len(b) < EchoLen {
		return fmt.Errorf("%w: echo of %d bytes, want %d", ErrShort, len(b), EchoLen)
	}
	be := binary.BigEndian
	if m := be.Uint16(b); m != EchoMagic {
		return fmt.Errorf("%w: echo magic %#04x", ErrMagic, m)
	}
	if b[2] != CalibVer {
		return fmt.Errorf("%w: echo version %d", ErrVersion, b[2])
	}
	if b[3] > 1 {
		return fmt.Errorf("%w: echo flags %#x", ErrRange, b[3])
	}
	*e = Echo{Reply: b[3] == 1, Seq: be.Uint32(b[4:]), FMSend: int64(be.Uint64(b[8:])),
		HostRx: int64(be.Uint64(b[16:])), HostTx: int64(be.Uint64(b[24:]))}
	return nil
}

// Calib tells a host its one-way delay estimate (ns).
type Calib struct{ DelayEst int64 }

// Encode writes c into b[:CalibMsgLen].
func (c *Calib) Encode(b []byte) (int, error) {
	if len(b) < CalibMsgLen {
		return 0, fmt.Errorf("%w: calib needs %d bytes, have %d", ErrShort, CalibMsgLen, len(b))
	}
	if c.DelayEst < 0 {
		return 0, fmt.Errorf("%w: negative delay %d", ErrRange, c.DelayEst)
	}
	binary.BigEndian.PutUint16(b, CalibMagic)
	b[2] = CalibVer
	binary.BigEndian.PutUint64(b[3:], uint64(c.DelayEst))
	return CalibMsgLen, nil
}

// DecodeCalib parses b into c.
func DecodeCalib(b []byte, c *Calib) error {
	if len(b) < CalibMsgLen {
		return fmt.Errorf("%w: calib of %d bytes, want %d", ErrShort, len(b), CalibMsgLen)
	}
	if m := binary.BigEndian.Uint16(b); m != CalibMagic {
		return fmt.Errorf("%w: calib magic %#04x", ErrMagic, m)
	}
	if b[2] != CalibVer {
		return fmt.Errorf("%w: calib version %d", ErrVersion, b[2])
	}
	d := int64(binary.BigEndian.Uint64(b[3:]))
	if d < 0 {
		return fmt.Errorf("%w: negative delay %d", ErrRange, d)
	}
	c.DelayEst = d
	return nil
}
