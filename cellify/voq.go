package cellify

import "errors"

// VOQConfig configures the VOQs of an ingress edge.
type VOQConfig struct {
	Src       EdgeID // this edge
	MaxVOQs   int    // default DefaultMaxVOQs
	RingBytes int    // per VOQ; DefaultRingBytes if 0
	Hops      uint8  // hop budget of the cells; DefaultHops if 0
	Packing   bool   // pack records across cells (off: a cell holds one record's bytes)
	Epoch     uint16 // carried by every cell: this edge's per-boot nonce (0: none)
	FirstSeq  uint32 // the seq of every VOQ's first cell
}

// VOQ defaults.
const (
	DefaultMaxVOQs = 1024
	DefaultHops    = 8
)

// VOQ is one virtual output queue: its Packer (whose Enqueued and Sent are
// what credit requests and grants count) and the frames it refused.
type VOQ struct {
	Key VOQKey
	*Packer
	Drops     uint64 // frames refused (ring full, length out of bounds)
	DropBytes uint64
}

// Enqueue adds a host frame; a refusal is counted.
func (v *VOQ) Enqueue(frame []byte) bool {
	if v.Packer.Enqueue(frame) {
		return true
	}
	v.Drops++
	v.DropBytes += uint64(len(frame))
	return false
}

// EnqueueParts adds a record of head followed by frame; a refusal is counted.
func (v *VOQ) EnqueueParts(head, frame []byte) bool {
	if v.Packer.EnqueueParts(head, frame) {
		return true
	}
	v.Drops++
	v.DropBytes += uint64(len(head) + len(frame))
	return false
}

// VOQSet is the bounded set of VOQs of an ingress edge, created on demand.
type VOQSet struct {
	cfg   VOQConfig
	m     map[VOQKey]*VOQ
	list  []*VOQ
	NoVOQ uint64 // frames refused: no VOQ could be created (MaxVOQs reached, invalid key)
}

// NewVOQSet returns an empty set.
func NewVOQSet(cfg VOQConfig) (*VOQSet, error) {
	if cfg.MaxVOQs == 0 {
		cfg.MaxVOQs = DefaultMaxVOQs
	}
	if cfg.Hops == 0 {
		cfg.Hops = DefaultHops
	}
	if cfg.Src == 0 || cfg.MaxVOQs < 0 || cfg.Hops > MaxHops || cfg.RingBytes < 0 {
		return nil, errors.New("cellify: VOQ config out of range")
	}
	return &VOQSet{cfg: cfg, m: make(map[VOQKey]*VOQ, cfg.MaxVOQs)}, nil
}

// Get returns the VOQ of key, creating it if needed; nil if the set is full
// or the key invalid (destination 0, class out of range).
func (s *VOQSet) Get(key VOQKey) *VOQ {
	if v := s.m[key]; v != nil {
		return v
	}
	if len(s.list) >= s.cfg.MaxVOQs {
		return nil
	}
	p, err := NewPacker(s.cfg.Src, key, s.cfg.RingBytes, s.cfg.Hops, s.cfg.Packing)
	if err != nil {
		return nil
	}
	p.hdr.Epoch, p.seq = s.cfg.Epoch, s.cfg.FirstSeq
	v := &VOQ{Key: key, Packer: p}
	s.m[key] = v
	s.list = append(s.list, v)
	return v
}

// Lookup returns the VOQ of key or nil, without creating it.
func (s *VOQSet) Lookup(key VOQKey) *VOQ { return s.m[key] }

// Enqueue adds a host frame to the VOQ of key; false if refused (counted in
// the VOQ, or in NoVOQ when there is none).
func (s *VOQSet) Enqueue(key VOQKey, frame []byte) bool {
	v := s.Get(key)
	if v == nil {
		s.NoVOQ++
		return false
	}
	return v.Enqueue(frame)
}

// All returns the VOQs in creation order; the slice is the set's own.
func (s *VOQSet) All() []*VOQ { return s.list }

// Backlog returns the stream bytes waiting in all VOQs.
func (s *VOQSet) Backlog() int {
	n := 0
	for _, v := range s.list {
		n += v.Backlog()
	}
	return n
}

// advance counts cells single-record cells of bytes stream bytes in all
// that were cut from the VOQ elsewhere (the kernel path, kerntx.go)
// while it held nothing: the next cell's seq and record number move past
// them and the totals count them.
func (v *VOQ) advance(cells, bytes uint64) {
	p := v.Packer
	p.seq += uint32(cells)
	p.recNo += uint16(cells)
	p.frames += cells
	p.enq += bytes
	p.sent += bytes
}
