package netns

import (
	"fmt"
	"strconv"

	"github.com/linkfabric/linkfabric/internal/ptr"
)

// StarOptions configure Star.
type StarOptions struct {
	// Shape is every host link's TBF (host NIC and switch port); nil: none.
	Shape *Shape
}

// Star returns the star of n hosts (2..8) and a fabric manager on one
// unmodified switch, a Linux bridge (the TDMA paper's testbed, §6.1):
// namespaces h1..hN, sw and fm; host i is h<i>:eth0 = 10.0.0.<i>/24 on
// switch port p<i>; the FM is fm:eth0 = 10.0.0.100/24 on sw:pfm, unshaped.
func Star(n int, o StarOptions) (*Topology, error) {
	if n < 2 || n > 8 {
		return nil, fmt.Errorf("netns: star of %d hosts: want 2 to 8", n)
	}
	t := &Topology{Name: "star" + strconv.Itoa(n), Addresses: map[string][]string{}}
	br := Bridge{NS: "sw", Name: "br0"}
	for i := 1; i <= n; i++ {
		h, p := "h"+strconv.Itoa(i), "p"+strconv.Itoa(i)
		t.Namespaces = append(t.Namespaces, h)
		t.Links = append(t.Links, VethPair{Ends: [2]End{{h, "eth0"}, {"sw", p}}, Shape: ptr.Copy(o.Shape)})
		t.Addresses[h+":eth0"] = []string{StarAddr(i) + "/24"}
		br.Ports = append(br.Ports, p)
	}
	t.Namespaces = append(t.Namespaces, "sw", "fm")
	t.Links = append(t.Links, VethPair{Ends: [2]End{{"fm", "eth0"}, {"sw", "pfm"}}})
	t.Addresses["fm:eth0"] = []string{StarFMAddr + "/24"}
	br.Ports = append(br.Ports, "pfm")
	t.Bridges = []Bridge{br}
	t.Roles = map[string]NodeRole{}
	x, err := t.Expand()
	if err != nil {
		return nil, err
	}
	if err := x.Validate(); err != nil {
		return nil, fmt.Errorf("netns: star: %w", err)
	}
	return x, nil
}

// StarAddr is host i's address in a Star (1-based).
func StarAddr(i int) string { return "10.0.0." + strconv.Itoa(i) }

// StarFMAddr is the fabric manager's address in a Star.
const StarFMAddr = "10.0.0.100"
