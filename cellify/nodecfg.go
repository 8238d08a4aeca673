package cellify

import (
	"errors"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/link"
)

// FloodPort is the destination port of flooded cells: the receiving edge
// delivers their records to every host port. Host ports are 0..FloodPort-1.
const FloodPort = 0xFF

// MaxHostFrame is the largest host frame a Node carries: a record holds
// the source host port (one byte) before the frame.
const MaxHostFrame = MaxRecordFrame - 1

// DefaultCellPayload is a Node's default cell payload: a 1500-byte cell
// frame.
const DefaultCellPayload = 1500 - CellPayloadOffset

// NodeConfig configures a Node. Start from DefaultNodeConfig.
type NodeConfig struct {
	Self      EdgeID
	Tier      Tier // TierEdge: an edge (host and link ports); ≥ 1: a fabric node of that tier
	HostPorts int  // an edge's host ports, 1..FloodPort; 0 for a fabric node
	Links     int  // link ports, 1..64

	Mem link.Memory
	Rng *rand.Rand // seeded: spraying is reproducible

	// Epoch is this boot's nonce, carried by the node's cells and credit
	// frames: the other edges reset the streams and credit totals of an
	// earlier boot when they see a new one. 0: drawn from Rng (a node
	// that restarts must get a new one: seed Rng differently, or set it).
	Epoch uint16
	// FirstSeq is the cell seq every stream starts at.
	FirstSeq uint32
	// EpochHold: frames of another edge's epoch before its current one are
	// dropped as stale for this long after the change, and taken as a new
	// one beyond (a forged or corrupted epoch costs this long, never a
	// stall). 0: the reassembly's EpochHold.
	EpochHold int64

	Spray       SprayMode
	SprayRounds int    // SprayPerm's reshuffle period (0: DefaultSprayRounds)
	FlowSeed    uint64 // FlowHash seed and the hash-mode decorrelation of this node

	// Edge.
	CellPayload  int       // payload bytes per cell
	Packing      bool      // pack records across cells; off: a cell holds one record's bytes
	Credits      bool      // pull: VOQs send within grants; off: push, cells cut on arrival
	Hops         uint8     // hop budget of the cells (1..MaxHops)
	RingBytes    int       // per VOQ (0: DefaultRingBytes)
	MaxVOQs      int       // 0: DefaultMaxVOQs
	HostRate     []float64 // bits/s per host port: the egress schedulers' rate (with Credits)
	Sched        SchedConfig
	Client       CreditClientConfig // PreCredit is taken from Sched.PreCredit
	Reasm        ReasmConfig        // Self is set; MaxPayload is raised to CellPayload
	MACTableSize int
	MACAge       int64 // ns
	FloodRate    int64 // bytes/s of flooded records (each destination edge's copy counts)
	FloodBurst   int64 // bytes

	// Reachability; Self, Tier and Links are set from the node's.
	Reach ReachConfig

	// Fabric: a cell forwarded to a link whose backlog is above this many
	// bytes gets FCI; 0: never.
	FCIThreshold int

	// LinkBacklog, if set, reports a link port's transmit backlog in bytes
	// (p2c spraying, FCI); otherwise the values given to SetLinkBacklog.
	// The node adds the bytes it has listed in Out for the link.
	LinkBacklog func(link int) int
	// LinkRoom, if set, reports how many more cells link port l's
	// transmit queue takes now (beyond, the link would drop them): an
	// edge cuts a VOQ's cells only for links of its class with room (the
	// node subtracts the cells it has listed in Out), and with none the
	// bytes wait in the VOQ (NodeStats.LinkFull) until one has.
	LinkRoom func(l int) int
	// LinkMACs, if set, holds per link the 12 bytes (destination, source
	// MAC) written into every frame sent on it; otherwise frames the node
	// makes carry zeros there and forwarded frames keep theirs.
	LinkMACs [][12]byte
}

// DefaultNodeConfig returns a node's defaults: an edge (tier TierEdge) with
// hostPorts ports of hostRate bits/s each, or a fabric node (tier ≥ 1,
// hostPorts 0). Credits and packing are on, spraying is SprayPerm.
func DefaultNodeConfig(self EdgeID, tier Tier, hostPorts, links int, hostRate float64, mem link.Memory, rng *rand.Rand) NodeConfig {
	rates := make([]float64, hostPorts)
	for i := range rates {
		rates[i] = hostRate
	}
	sc := DefaultSchedConfig(max(hostRate, 1))
	sc.StopAbove = 4 * sc.CreditSize
	sc.MaxInFlight = 32 * sc.CreditSize
	return NodeConfig{
		Self: self, Tier: tier, HostPorts: hostPorts, Links: links,
		Mem: mem, Rng: rng,
		Spray:        SprayPerm,
		FlowSeed:     uint64(self) * 0x9e3779b97f4a7c15,
		CellPayload:  DefaultCellPayload,
		Packing:      true,
		Credits:      true,
		Hops:         DefaultHops,
		HostRate:     rates,
		Sched:        sc,
		Client:       DefaultCreditClientConfig(),
		MACTableSize: 4096,
		MACAge:       300e9,
		FloodRate:    10 << 20,
		FloodBurst:   64 << 10,
		Reach:        DefaultReachConfig(self, tier, links),
		FCIThreshold: 32 << 10,
	}
}

func (c *NodeConfig) check() error {
	switch {
	case c.Self == 0 || c.Links < 1 || c.Links > 64:
		return errors.New("cellify: node Self must be nonzero and Links in [1, 64]")
	case c.Mem == nil || c.Rng == nil:
		return errors.New("cellify: a node needs a Memory and a seeded Rng")
	case c.Tier == TierEdge && (c.HostPorts < 1 || c.HostPorts > FloodPort):
		return errors.New("cellify: an edge needs 1..255 host ports")
	case c.Tier != TierEdge && c.HostPorts != 0:
		return errors.New("cellify: a fabric node has no host ports")
	case c.Tier > MaxHops:
		return errors.New("cellify: tier above MaxHops")
	case c.LinkMACs != nil && len(c.LinkMACs) != c.Links:
		return errors.New("cellify: LinkMACs must have one entry per link")
	case c.FCIThreshold < 0 || c.EpochHold < 0:
		return errors.New("cellify: FCIThreshold and EpochHold must be ≥ 0")
	}
	if c.Tier != TierEdge {
		return nil
	}
	switch {
	case c.CellPayload < 1 || c.CellPayload > MaxCellPayload:
		return errors.New("cellify: CellPayload must be in [1, 65535]")
	case c.Hops < 1 || c.Hops > MaxHops:
		return errors.New("cellify: Hops must be in [1, 15]")
	case c.Credits && len(c.HostRate) != c.HostPorts:
		return errors.New("cellify: HostRate needs one rate per host port")
	case c.FloodRate < 0 || c.FloodBurst < 0 || c.MACAge < 0:
		return errors.New("cellify: FloodRate, FloodBurst and MACAge must be ≥ 0")
	}
	return nil
}
