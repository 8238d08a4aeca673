package netns

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A wire: a link through a middle namespace.
//
// The dataplane transmits through AF_XDP, which bypasses the qdiscs of its
// own ports, so tc netem on a switch's link port never sees the dataplane's
// frames. A link with a wire instead runs
//
//	sw1:link0 ⇄ wire:end0  [kernel forwards both ways, netem on egress]  wire:end1 ⇄ sw2:link0
//
// In the wire namespace the kernel forwards every frame that arrives on one
// port out of the other (tc ingress u32 match-all + mirred egress redirect),
// so the frames go through each port's egress qdisc, where netem applies:
// the netem arguments of the wire are installed as the root qdisc of both
// ports, one per direction. A Linux bridge is not used: it never forwards
// frames to 01:80:C2:00:00:01 (PFC/PAUSE), which the dataplane sends on the
// link.
//
// A kernel without sch_netem (like the development machines of this
// project) gets a clear error from Up naming the alternative: linkfabric's
// own eBPF impairment at the receiving link port (linkfabric impair).

// Wire configures the middle namespace of a link (VethPair.Wire).
type Wire struct {
	// NS is the short name of the middle namespace. Default "wire", then
	// "wire1", "wire2", ... for further wired links.
	NS string `yaml:"ns,omitempty" json:"ns,omitempty"`
	// Netem is the tc netem arguments applied to both directions, e.g.
	// "loss 1% corrupt 0.1% delay 100us rate 1gbit". Empty: the wire
	// forwards unimpaired.
	Netem string `yaml:"netem,omitempty" json:"netem,omitempty"`
}

// WireNS is an expanded wire: its namespace, its two ports (Ports[i] faces
// the link's Ends[i]) and the netem arguments.
type WireNS struct {
	NS    string    `json:"ns"`
	Ports [2]string `json:"ports"`
	Ends  [2]End    `json:"ends"`
	Netem string    `json:"netem,omitempty"`
}

// Wire port names inside the middle namespace.
const (
	WirePort0 = "end0"
	WirePort1 = "end1"
)

// addWire replaces link i (l, with a Wire) of x by two veth pairs through a
// new middle namespace and records it in x.Wires.
func (x *Topology) addWire(i int, l VethPair) error {
	w := *l.Wire
	if w.NS == "" {
		w.NS = "wire"
		if n := len(x.Wires); n > 0 {
			w.NS += strconv.Itoa(n)
		}
	}
	for _, n := range x.Namespaces {
		if n == w.NS {
			return fmt.Errorf("links[%d] (%s ⇄ %s): wire namespace %q is already a namespace of the topology: name the wire, e.g. wire: {ns: w%d}", i, l.Ends[0], l.Ends[1], w.NS, i)
		}
	}
	if strings.ContainsAny(w.Netem, "\n;|&`$") {
		return fmt.Errorf("links[%d] (%s ⇄ %s): wire netem %q: want tc netem arguments such as \"loss 1%% corrupt 0.1%%\"", i, l.Ends[0], l.Ends[1], w.Netem)
	}
	x.Namespaces = append(x.Namespaces, w.NS)
	for k, port := range []string{WirePort0, WirePort1} {
		c := l
		c.Wire = nil
		c.Ends[1] = End{NS: w.NS, Dev: port}
		c.Ends[0] = l.Ends[k]
		x.Links = append(x.Links, c)
	}
	x.Wires = append(x.Wires, WireNS{NS: w.NS, Ports: [2]string{WirePort0, WirePort1}, Ends: l.Ends, Netem: strings.TrimSpace(w.Netem)})
	return nil
}

// SetNetem gives every switch-to-switch link (MTU class "link") of t a
// wire with netem arguments args (up --netem); a wire that has its
// own netem arguments keeps them. t may be expanded already (ParseTopology
// and Preset expand): links into a wire namespace are then left alone and
// the recorded wire gets args.
func (t *Topology) SetNetem(args string) {
	wired := map[string]bool{}
	for i := range t.Wires {
		wired[t.Wires[i].NS] = true
		if t.Wires[i].Netem == "" {
			t.Wires[i].Netem = strings.TrimSpace(args)
		}
	}
	for i := range t.Links {
		l := &t.Links[i]
		if l.MTU != MTULink || wired[l.Ends[0].NS] || wired[l.Ends[1].NS] {
			continue
		}
		if l.Wire == nil {
			l.Wire = &Wire{}
		}
		if l.Wire.Netem == "" {
			l.Wire.Netem = args
		}
	}
}

// ErrNoNetem is returned (wrapped) by Up when a wire asks for netem and the
// kernel has no sch_netem.
var ErrNoNetem = errors.New("this kernel has no sch_netem (CONFIG_NET_SCH_NETEM)")

// tc runs tc in namespace ns.
func tc(ns string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := Command(ctx, ns, "tc", args...).CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("netns %s: tc not found: install iproute2 (scripts/deps.sh)", ns)
	}
	if err != nil {
		return fmt.Errorf("netns %s: tc %s: %w: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupWire makes the middle namespace forward both ways and installs netem.
func setupWire(prefix string, w WireNS) error {
	ns := prefix + w.NS
	for k, port := range w.Ports {
		other := w.Ports[1-k]
		if err := tc(ns, "qdisc", "add", "dev", port, "clsact"); err != nil {
			return err
		}
		if err := tc(ns, "filter", "add", "dev", port, "ingress", "protocol", "all", "u32", "match", "u32", "0", "0",
			"action", "mirred", "egress", "redirect", "dev", other); err != nil {
			return fmt.Errorf("%w (the wire forwards with tc u32 and mirred: a kernel needs CONFIG_NET_CLS_U32 and CONFIG_NET_ACT_MIRRED)", err)
		}
	}
	if w.Netem == "" {
		return nil
	}
	for _, port := range w.Ports {
		args := append([]string{"qdisc", "add", "dev", port, "root", "netem"}, strings.Fields(w.Netem)...)
		if err := tc(ns, args...); err != nil {
			if strings.Contains(err.Error(), "qdisc kind is unknown") {
				return fmt.Errorf("netns %s: tc netem %q on the wire of %s ⇄ %s: %w: tc says \"Specified qdisc kind is unknown\". "+
					"On this kernel impair the link with linkfabric's eBPF stage instead, on the receiving link port of each direction: "+
					"linkfabric impair --netns %s --dev %s --loss 1e-2 [--burst 3] [--flip 1e-3], and --netns %s --dev %s for the other direction; or drop netem from the wire",
					ns, w.Netem, w.Ends[0], w.Ends[1], ErrNoNetem, prefix+w.Ends[1].NS, w.Ends[1].Dev, prefix+w.Ends[0].NS, w.Ends[0].Dev)
			}
			return fmt.Errorf("%w (netem arguments %q of the wire of %s ⇄ %s)", err, w.Netem, w.Ends[0], w.Ends[1])
		}
	}
	return nil
}
