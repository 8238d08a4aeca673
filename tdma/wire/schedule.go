package wire

import (
	"encoding/binary"
	"fmt"
)

// Limits of the fixed-size messages.
const (
	// MaxHosts is the largest fabric a schedule or report describes.
	MaxHosts = 64
	// MaxSlots is the most slots in a round (the trailer's slot index is one byte).
	MaxSlots = 256
)

// Schedule message layout: magic "TS", version, then the fields below in
// order, all big-endian, the flags last, then the class map (NHosts
// bytes), the slots (NSlots bytes) and, with ScheduleBudget, NSlots
// budgets of 4 bytes. Version 1 (before staggered windows) lacked the
// flags byte: it decodes as Flags 0, aligned windows. A later version, or
// a flag this decoder does not know, is refused (the error names the
// flags it knows), so that a host never opens windows other than the FM
// means nor sends more into them than it says.
const (
	ScheduleMagic   = 0x5453
	ScheduleVersion = 2
	scheduleHdrLen  = 23
	scheduleV1Len   = scheduleHdrLen - 1
	// MaxScheduleLen is the longest encoded schedule.
	MaxScheduleLen = scheduleHdrLen + MaxHosts + 5*MaxSlots
)

// Schedule flags.
const (
	// ScheduleStagger: the windows to destination d open and close
	// d·Guard/NHosts later than their slot (staggered windows, package
	// gate). The FM decides it for every host alike.
	ScheduleStagger = 1 << 0
	// ScheduleBudget: the schedule carries a budget for each slot
	// (Schedule.Budget), which the host keeps to. The FM sets it in the
	// rounds of a transfer's tail whose plan it should follow slot by slot.
	ScheduleBudget = 1 << 1
	scheduleFlags  = ScheduleStagger | ScheduleBudget
)

// flagNames names the flags this decoder knows, for its refusals.
const flagNames = "stagger 0x01, budget 0x02"

// Schedule is one host's part of a round (FM → host, UDP, one round ahead):
// its destination → class map and the class it sends in each slot.
type Schedule struct {
	Host       uint16
	Round      uint32
	SlotLen    uint32 // ns
	Guard      uint32 // ns
	LeaseSlots uint16 // free-run bound after the last frame heard
	NHosts     uint8
	NSlots     uint16
	Flags      uint8          // Schedule* bits
	ClassMap   [MaxHosts]int8 // destination → class, -1 none
	Slot       [MaxSlots]int8 // slot → class this host sends, -1 none
	// Budget (ScheduleBudget): the most payload bytes this host's windows
	// of the round to slot k's destination may carry from the round's
	// first slot to the end of slot k, all of them together; 0: no bound.
	// None without the flag, nor beyond NSlots.
	Budget [MaxSlots]uint32
}

// Staggered reports whether the FM staggers this round's windows
// (ScheduleStagger).
func (s *Schedule) Staggered() bool { return s.Flags&ScheduleStagger != 0 }

// Budgeted reports whether the schedule carries slot budgets
// (ScheduleBudget).
func (s *Schedule) Budgeted() bool { return s.Flags&ScheduleBudget != 0 }

// Len is the encoded length.
func (s *Schedule) Len() int {
	n := scheduleHdrLen + int(s.NHosts) + int(s.NSlots)
	if s.Budgeted() {
		n += 4 * int(s.NSlots)
	}
	return n
}

// Dst returns the destination of class c in this round, -1 if none.
func (s *Schedule) Dst(c int) int {
	for d := 0; d < int(s.NHosts); d++ {
		if int(s.ClassMap[d]) == c && c >= 0 {
			return d
		}
	}
	return -1
}

func (s *Schedule) check() error {
	if s.NHosts > MaxHosts || int(s.NSlots) > MaxSlots {
		return fmt.Errorf("%w: schedule of %d hosts, %d slots (max %d, %d)", ErrRange, s.NHosts, s.NSlots, MaxHosts, MaxSlots)
	}
	if s.Flags&^scheduleFlags != 0 {
		return fmt.Errorf("%w: schedule flags %#02x, unknown %#02x (this host knows %s)", ErrRange, s.Flags, s.Flags&^scheduleFlags, flagNames)
	}
	for k, b := range s.Budget {
		if b != 0 && (!s.Budgeted() || k >= int(s.NSlots)) {
			return fmt.Errorf("%w: budget %d for slot %d of %d, budget flag %v", ErrRange, b, k, s.NSlots, s.Budgeted())
		}
	}
	for d := 0; d < int(s.NHosts); d++ {
		if c := s.ClassMap[d]; c < -1 || c > 7 {
			return fmt.Errorf("%w: class %d for destination %d", ErrRange, c, d)
		}
	}
	for k := 0; k < int(s.NSlots); k++ {
		if c := s.Slot[k]; c < -1 || c > 7 {
			return fmt.Errorf("%w: class %d in slot %d", ErrRange, c, k)
		}
	}
	return nil
}

// Encode writes s into b and returns its length.
func (s *Schedule) Encode(b []byte) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	n := s.Len()
	if err := putHead(b, "schedule", n, ScheduleMagic, ScheduleVersion); err != nil {
		return 0, err
	}
	be := binary.BigEndian
	be.PutUint16(b[3:], s.Host)
	be.PutUint32(b[5:], s.Round)
	be.PutUint32(b[9:], s.SlotLen)
	be.PutUint32(b[13:], s.Guard)
	be.PutUint16(b[17:], s.LeaseSlots)
	b[19] = s.NHosts
	be.PutUint16(b[20:], s.NSlots)
	b[22] = s.Flags
	p := scheduleHdrLen
	for d := 0; d < int(s.NHosts); d++ {
		b[p] = byte(s.ClassMap[d])
		p++
	}
	for k := 0; k < int(s.NSlots); k++ {
		b[p] = byte(s.Slot[k])
		p++
	}
	if s.Budgeted() {
		for k := 0; k < int(s.NSlots); k++ {
			be.PutUint32(b[p:], s.Budget[k])
			p += 4
		}
	}
	return n, nil
}

// DecodeSchedule parses b into s: version 2, or version 1 as Flags 0.
// Entries beyond NHosts / NSlots are set to -1 (budgets to 0).
func DecodeSchedule(b []byte, s *Schedule) error {
	hdr, version := scheduleHdrLen, ScheduleVersion
	if len(b) > 2 && b[2] == 1 {
		hdr, version = scheduleV1Len, 1
	}
	if err := checkHead(b, "schedule", hdr, ScheduleMagic, version); err != nil {
		return err
	}
	be := binary.BigEndian
	s.Host = be.Uint16(b[3:])
	s.Round = be.Uint32(b[5:])
	s.SlotLen = be.Uint32(b[9:])
	s.Guard = be.Uint32(b[13:])
	s.LeaseSlots = be.Uint16(b[17:])
	s.NHosts = b[19]
	s.NSlots = be.Uint16(b[20:])
	s.Flags = 0
	if hdr == scheduleHdrLen {
		s.Flags = b[22]
	}
	if s.NHosts > MaxHosts || int(s.NSlots) > MaxSlots {
		return fmt.Errorf("%w: schedule of %d hosts, %d slots (max %d, %d)", ErrRange, s.NHosts, s.NSlots, MaxHosts, MaxSlots)
	}
	if s.Flags&^scheduleFlags != 0 {
		return fmt.Errorf("%w: schedule flags %#02x, unknown %#02x (this host knows %s)", ErrRange, s.Flags, s.Flags&^scheduleFlags, flagNames)
	}
	if n := hdr + s.Len() - scheduleHdrLen; len(b) < n {
		return fmt.Errorf("%w: schedule of %d bytes, its counts need %d", ErrShort, len(b), n)
	}
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	for i := range s.Slot {
		s.Slot[i] = -1
	}
	s.Budget = [MaxSlots]uint32{}
	p := hdr
	for d := 0; d < int(s.NHosts); d++ {
		s.ClassMap[d] = int8(b[p])
		p++
	}
	for k := 0; k < int(s.NSlots); k++ {
		s.Slot[k] = int8(b[p])
		p++
	}
	if s.Budgeted() {
		for k := 0; k < int(s.NSlots); k++ {
			s.Budget[k] = be.Uint32(b[p:])
			p += 4
		}
	}
	return s.check()
}
