package netns

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MTU classes of a veth pair.
const (
	// MTUHost is the MTU of host-facing ports: Options.MTU.
	MTUHost = "host"
	// MTULink is the MTU of switch-to-switch links: Options.MTU plus
	// Options.LinkHeaderLen, so a host-sized frame still fits after the
	// dataplane adds its link header.
	MTULink = "link"
)

// AllEnds in Topology.TxChecksumOff or Topology.GRO means every veth end
// of the topology.
const AllEnds = "all"

// Topology describes a testbed as data: namespaces, veth pairs, addresses,
// bridges and offloads. Namespace names are short ("h1", "sw1"); Up prefixes
// them (Options.Prefix + "h1" = "lfh1"). Interface names live inside their
// namespace and are never prefixed.
type Topology struct {
	// Name names the topology (the preset name for presets).
	Name string `yaml:"name" json:"name"`
	// Namespaces lists the short names of the namespaces to create.
	Namespaces []string `yaml:"namespaces" json:"namespaces"`
	// Links are the veth pairs.
	Links []VethPair `yaml:"links" json:"links"`
	// Addresses maps an end ("ns:dev") to its CIDR addresses.
	Addresses map[string][]string `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	// Bridges are created only when forwarding is "kernel".
	Bridges []Bridge `yaml:"bridges,omitempty" json:"bridges,omitempty"`
	// TxChecksumOff lists the ends ("ns:dev") whose TX checksum offload is
	// turned off, or the single entry "all".
	TxChecksumOff []string `yaml:"tx_checksum_off,omitempty" json:"tx_checksum_off,omitempty"`
	// GRO lists the ends ("ns:dev") whose GRO is turned on, or the single
	// entry "all". A veth accepts frames an XDP program redirects into it
	// only while its peer has GRO on or an XDP program of its own.
	GRO []string `yaml:"gro,omitempty" json:"gro,omitempty"`
	// GROModes, if set, names the dataplane modes under which the GRO ends
	// have GRO on; under any other mode, or none known, it is off (see
	// Testbed.SetMode). Empty: GRO is on whatever runs.
	GROModes []string `yaml:"gro_modes,omitempty" json:"gro_modes,omitempty"`
	// LinkMTU, where it is larger than the host MTU plus the link header
	// (Options.LinkMTU), is the MTU of the veth pairs of class "link"
	// (PairMTU): room for link frames that carry more than one host frame,
	// as mode cells packs them into cells as large as the link MTU allows.
	LinkMTU int `yaml:"link_mtu,omitempty" json:"link_mtu,omitempty"`
	// Roles names what a namespace is: host, edge or fabric (node.go).
	// Namespaces not listed get the role their ports imply.
	Roles map[string]NodeRole `yaml:"roles,omitempty" json:"roles,omitempty"`
	// Wires are the middle namespaces that links with a Wire run through.
	// Expand fills it in from VethPair.Wire (see wire.go); it is not written
	// in YAML.
	Wires []WireNS `yaml:"-" json:"wires,omitempty"`
}

// VethPair is one veth pair between two ends.
type VethPair struct {
	Ends [2]End `yaml:"ends" json:"ends"`
	// MTU is the MTU class: "host" (default) or "link".
	MTU string `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	// Count > 1 repeats the pair Count times, replacing "{i}" in the end
	// names with 0..Count-1 (a bundle of parallel links). Expand resolves it.
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
	// Queues is the number of TX and RX queues of each end (default 1). A
	// LinkGuardian link wants 2: queue 1 is the dataplane's priority lane
	// (retransmissions, loss notifications, PFC), so they do not wait behind
	// data in queue 0's rings.
	Queues int `yaml:"queues,omitempty" json:"queues,omitempty"`
	// Wire, if set, runs the link through a middle namespace where the
	// kernel forwards it and tc netem can impair it (see wire.go).
	Wire *Wire `yaml:"wire,omitempty" json:"wire,omitempty"`
	// Rate and Buffer limit what a dataplane port at either end transmits
	// on this link (its line rate, bit/s, and its egress queue, bytes):
	// veth has no speed of its own. Zero: unlimited, and the dataplane's
	// default buffer.
	Rate   BitRate  `yaml:"rate,omitempty" json:"rate_bps,omitempty"`
	Buffer ByteSize `yaml:"buffer,omitempty" json:"buffer,omitempty"`
	// Shape puts a kernel TBF qdisc on both ends (shape.go): on a host end
	// it is the NIC's line rate, on a switch end the egress port and its
	// buffer. It works with kernel forwarding (bridges), unlike Rate.
	Shape *Shape `yaml:"shape,omitempty" json:"shape,omitempty"`
}

// MaxQueues bounds VethPair.Queues.
const MaxQueues = 16

// Bridge is a Linux bridge in one namespace over named ports of that
// namespace; it is the "kernel" forwarding path.
type Bridge struct {
	NS    string   `yaml:"ns" json:"ns"`
	Name  string   `yaml:"name" json:"name"`
	Ports []string `yaml:"ports" json:"ports"`
}

// End is one end of a veth pair: a device in a namespace (short name).
// In YAML and JSON it is written "ns:dev".
type End struct {
	NS  string
	Dev string
}

func (e End) String() string { return e.NS + ":" + e.Dev }

// MarshalText writes "ns:dev".
func (e End) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses "ns:dev".
func (e *End) UnmarshalText(b []byte) error {
	ns, dev, ok := strings.Cut(string(b), ":")
	if !ok || ns == "" || dev == "" {
		return fmt.Errorf("end %q: want \"namespace:device\", e.g. \"sw1:link0\"", b)
	}
	e.NS, e.Dev = ns, dev
	return nil
}

// ParseEnd parses "ns:dev".
func ParseEnd(s string) (End, error) {
	var e End
	err := e.UnmarshalText([]byte(s))
	return e, err
}

//go:embed presets/*.yaml
var presetFS embed.FS

// Presets returns the names of the built-in topologies, sorted.
func Presets() []string {
	ents, _ := presetFS.ReadDir("presets")
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Preset returns a built-in topology ("pair", "bundle"), validated and
// expanded.
func Preset(name string) (*Topology, error) {
	b, err := presetFS.ReadFile(path.Join("presets", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("netns: no preset topology %q (have %s)", name, strings.Join(Presets(), ", "))
	}
	t, err := ParseTopology(b)
	if err != nil {
		return nil, fmt.Errorf("netns: preset %q: %w", name, err)
	}
	return t, nil
}

// LoadTopology reads a topology from a YAML file, or a preset if the file
// name has no ".yaml"/".yml" suffix and names a preset.
func LoadTopology(file string) (*Topology, error) {
	if !strings.HasSuffix(file, ".yaml") && !strings.HasSuffix(file, ".yml") && slices.Contains(Presets(), file) {
		return Preset(file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	t, err := ParseTopology(b)
	if err != nil {
		return nil, fmt.Errorf("netns: %s: %w", file, err)
	}
	return t, nil
}

// ParseTopology parses YAML (unknown fields are errors), expands counted
// links and validates the result.
func ParseTopology(b []byte) (*Topology, error) {
	var t Topology
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("topology YAML: %w", err)
	}
	x, err := t.Expand()
	if err != nil {
		return nil, err
	}
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return x, nil
}

// Expand returns a copy with every counted link repeated ("{i}" replaced by
// the index) and the default MTU class filled in.
func (t *Topology) Expand() (*Topology, error) {
	x := *t
	x.Links = nil
	x.Namespaces = slices.Clone(t.Namespaces)
	x.Wires = slices.Clone(t.Wires)
	for i, l := range t.Links {
		if l.Wire != nil {
			if l.Count > 1 {
				return nil, fmt.Errorf("links[%d] (%s ⇄ %s): a wire needs a single link (count %d): write the links of a bundle one by one", i, l.Ends[0], l.Ends[1], l.Count)
			}
			if err := x.addWire(i, l); err != nil {
				return nil, err
			}
			continue
		}
		if l.MTU == "" {
			l.MTU = MTUHost
		}
		n := l.Count
		if n < 0 {
			return nil, fmt.Errorf("links[%d] (%s ⇄ %s): count %d must be >= 0", i, l.Ends[0], l.Ends[1], n)
		}
		if n <= 1 {
			if strings.Contains(l.Ends[0].String()+l.Ends[1].String(), "{i}") {
				if n == 0 {
					return nil, fmt.Errorf("links[%d] (%s ⇄ %s): \"{i}\" needs a count", i, l.Ends[0], l.Ends[1])
				}
			}
			sub := func(s string) string { return strings.ReplaceAll(s, "{i}", "0") }
			l.Ends[0].Dev, l.Ends[1].Dev = sub(l.Ends[0].Dev), sub(l.Ends[1].Dev)
			l.Count = 0
			x.Links = append(x.Links, l)
			continue
		}
		if !strings.Contains(l.Ends[0].Dev, "{i}") || !strings.Contains(l.Ends[1].Dev, "{i}") {
			return nil, fmt.Errorf("links[%d] (%s ⇄ %s): count %d needs \"{i}\" in both device names, e.g. \"sw1:link{i}\"", i, l.Ends[0], l.Ends[1], n)
		}
		for k := 0; k < n; k++ {
			c := l
			c.Count = 0
			ks := strconv.Itoa(k)
			c.Ends[0].Dev = strings.ReplaceAll(l.Ends[0].Dev, "{i}", ks)
			c.Ends[1].Dev = strings.ReplaceAll(l.Ends[1].Dev, "{i}", ks)
			x.Links = append(x.Links, c)
		}
	}
	return &x, nil
}

var (
	nsNameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	devNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// maxNSName bounds namespace names (prefix + short name) so they stay
// readable and far from filesystem limits.
const maxNSName = 64

func validDev(d string) error {
	if len(d) > 15 {
		return fmt.Errorf("device name %q is longer than 15 bytes (IFNAMSIZ)", d)
	}
	if !devNameRE.MatchString(d) {
		return fmt.Errorf("device name %q: use letters, digits, '_', '-', '.'", d)
	}
	if d == "lo" {
		return fmt.Errorf("device name %q is the loopback device", d)
	}
	return nil
}

// Validate checks that every name referenced is declared, names are legal and
// unique, MTU classes are known and addresses parse. It expects an expanded
// topology (see Expand; ParseTopology does both).
func (t *Topology) Validate() error {
	if len(t.Namespaces) == 0 {
		return errors.New("topology has no namespaces")
	}
	if t.LinkMTU < 0 || t.LinkMTU > 65535 {
		return fmt.Errorf("link_mtu %d: want 0 (the host MTU plus the link header) to 65535", t.LinkMTU)
	}
	nss := map[string]bool{}
	for _, n := range t.Namespaces {
		if !nsNameRE.MatchString(n) || len(n) > maxNSName/2 {
			return fmt.Errorf("namespace name %q: use 1-%d letters, digits, '_', '-', '.'", n, maxNSName/2)
		}
		if nss[n] {
			return fmt.Errorf("namespace %q declared twice", n)
		}
		nss[n] = true
	}
	ends := map[End]bool{}
	for i, l := range t.Links {
		if l.Count > 1 {
			return fmt.Errorf("links[%d]: count not expanded (call Expand first)", i)
		}
		switch l.MTU {
		case MTUHost, MTULink, "":
		default:
			return fmt.Errorf("links[%d] (%s ⇄ %s): mtu class %q: want %q or %q", i, l.Ends[0], l.Ends[1], l.MTU, MTUHost, MTULink)
		}
		if l.Queues < 0 || l.Queues > MaxQueues {
			return fmt.Errorf("links[%d] (%s ⇄ %s): queues %d: want 1 to %d", i, l.Ends[0], l.Ends[1], l.Queues, MaxQueues)
		}
		if err := l.Shape.validate(); err != nil {
			return fmt.Errorf("links[%d] (%s ⇄ %s): shape: %w", i, l.Ends[0], l.Ends[1], err)
		}
		if l.Buffer != 0 && l.Rate == 0 {
			return fmt.Errorf("links[%d] (%s ⇄ %s): buffer %s without a rate: the buffer is the queue in front of a rate limit", i, l.Ends[0], l.Ends[1], l.Buffer)
		}
		for _, e := range l.Ends {
			if !nss[e.NS] {
				return fmt.Errorf("links[%d]: end %s: namespace %q is not in namespaces %v", i, e, e.NS, t.Namespaces)
			}
			if err := validDev(e.Dev); err != nil {
				return fmt.Errorf("links[%d]: end %s: %w", i, e, err)
			}
			if ends[e] {
				return fmt.Errorf("links[%d]: end %s is used twice", i, e)
			}
			ends[e] = true
		}
	}
	for k, addrs := range t.Addresses {
		e, err := ParseEnd(k)
		if err != nil {
			return fmt.Errorf("addresses: %w", err)
		}
		if !ends[e] {
			return fmt.Errorf("addresses: end %s is not an end of any link", e)
		}
		for _, a := range addrs {
			if _, err := netip.ParsePrefix(a); err != nil {
				return fmt.Errorf("addresses: %s: %q is not an address/prefix like 10.0.0.1/24", e, a)
			}
		}
	}
	enslaved := map[End]string{}
	bridges := map[End]bool{}
	for i, b := range t.Bridges {
		if !nss[b.NS] {
			return fmt.Errorf("bridges[%d] %s: namespace %q is not in namespaces %v", i, b.Name, b.NS, t.Namespaces)
		}
		if err := validDev(b.Name); err != nil {
			return fmt.Errorf("bridges[%d]: %w", i, err)
		}
		be := End{b.NS, b.Name}
		if ends[be] || bridges[be] {
			return fmt.Errorf("bridges[%d]: name %s is already used", i, be)
		}
		bridges[be] = true
		if len(b.Ports) == 0 {
			return fmt.Errorf("bridges[%d] %s: no ports", i, be)
		}
		for _, p := range b.Ports {
			pe := End{b.NS, p}
			if !ends[pe] {
				return fmt.Errorf("bridges[%d] %s: port %s is not an end of any link", i, be, pe)
			}
			if other, ok := enslaved[pe]; ok {
				return fmt.Errorf("bridges[%d] %s: port %s is already in bridge %s", i, be, pe, other)
			}
			enslaved[pe] = b.Name
		}
	}
	if err := t.validateRoles(nss); err != nil {
		return err
	}
	if err := t.validateReach(); err != nil {
		return err
	}
	if err := checkEndList("tx_checksum_off", t.TxChecksumOff, ends); err != nil {
		return err
	}
	if err := checkEndList("gro", t.GRO, ends); err != nil {
		return err
	}
	for i, m := range t.GROModes {
		if m == "" || slices.Contains(t.GROModes[:i], m) {
			return fmt.Errorf("gro_modes: %q empty or listed twice", m)
		}
	}
	if len(t.GROModes) > 0 && len(t.GRO) == 0 {
		return fmt.Errorf("gro_modes: no gro ends to turn on")
	}
	return nil
}

// checkEndList checks a list of ends named by field: each an end of a
// link, or AllEnds alone.
func checkEndList(field string, list []string, ends map[End]bool) error {
	for _, s := range list {
		if s == AllEnds {
			if len(list) != 1 {
				return fmt.Errorf("%s: %q must be the only entry", field, AllEnds)
			}
			continue
		}
		e, err := ParseEnd(s)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if !ends[e] {
			return fmt.Errorf("%s: end %s is not an end of any link", field, e)
		}
	}
	return nil
}

// TxChecksumOffFor reports whether end e gets TX checksum offload turned off.
func (t *Topology) TxChecksumOffFor(e End) bool { return listsEnd(t.TxChecksumOff, e) }

// GROFor reports whether end e is one whose GRO the testbed turns on.
func (t *Topology) GROFor(e End) bool { return listsEnd(t.GRO, e) }

// GROIn reports whether the GRO ends have GRO on while the dataplanes run
// mode ("": none known).
func (t *Topology) GROIn(mode string) bool {
	return len(t.GROModes) == 0 || slices.Contains(t.GROModes, mode)
}

// listsEnd reports whether list names e or is AllEnds.
func listsEnd(list []string, e End) bool {
	for _, s := range list {
		if s == AllEnds || s == e.String() {
			return true
		}
	}
	return false
}

// NamespaceNames returns the full namespace names for prefix, in topology
// order.
func (t *Topology) NamespaceNames(prefix string) []string {
	out := make([]string, len(t.Namespaces))
	for i, n := range t.Namespaces {
		out[i] = prefix + n
	}
	return out
}
