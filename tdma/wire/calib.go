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
	if err := putHead(b, "echo", EchoLen, EchoMagic, CalibVer); err != nil {
		return 0, err
	}
	be := binary.BigEndian
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
	if err := checkHead(b, "echo", EchoLen, EchoMagic, CalibVer); err != nil {
		return err
	}
	be := binary.BigEndian
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
	if c.DelayEst < 0 {
		return 0, fmt.Errorf("%w: negative delay %d", ErrRange, c.DelayEst)
	}
	if err := putHead(b, "calib", CalibMsgLen, CalibMagic, CalibVer); err != nil {
		return 0, err
	}
	binary.BigEndian.PutUint64(b[3:], uint64(c.DelayEst))
	return CalibMsgLen, nil
}

// DecodeCalib parses b into c.
func DecodeCalib(b []byte, c *Calib) error {
	if err := checkHead(b, "calib", CalibMsgLen, CalibMagic, CalibVer); err != nil {
		return err
	}
	d := int64(binary.BigEndian.Uint64(b[3:]))
	if d < 0 {
		return fmt.Errorf("%w: negative delay %d", ErrRange, d)
	}
	c.DelayEst = d
	return nil
}
