package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Containerfile copies what `make image` builds, from the context it
// builds it into, and its entry point is where it copies it to.
func TestContainerfileCopiesWhatMakeImageBuilds(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE_BIN := (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no IMAGE_BIN := line")
	}
	bin := string(m[1])
	if !regexp.MustCompile(`(?m)^\tCGO_ENABLED=0 \$\(GO\) build( -\S+)* -o \$\(IMAGE_BIN\) \./cmd/linkfabric$`).Match(mk) {
		t.Error("Makefile: the image target does not build $(IMAGE_BIN) statically (CGO_ENABLED=0)")
	}
	if !strings.Contains(string(mk), "build -f deploy/Containerfile -t $(IMAGE) $(dir $(IMAGE_BIN))") {
		t.Error("Makefile: the image is not built from deploy/Containerfile with $(IMAGE_BIN)'s directory as the context")
	}
	cf, err := os.ReadFile("../../deploy/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from, src, dst, entry string
	for _, line := range strings.Split(string(cf), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "FROM":
			from = f[1]
		case "COPY":
			src, dst = f[1], f[2]
		case "ENTRYPOINT":
			entry = strings.Trim(strings.Join(f[1:], " "), `[]"`)
		}
	}
	if from != "scratch" {
		t.Errorf("Containerfile: FROM %s, want scratch (the binary is static)", from)
	}
	if src != path.Base(bin) {
		t.Errorf("Containerfile: COPY %s, but make image builds %s into the context %s", src, path.Base(bin), path.Dir(bin))
	}
	if entry != dst {
		t.Errorf("Containerfile: ENTRYPOINT %q is not where COPY puts the binary (%s)", entry, dst)
	}
}

// clabTopology is the part of a containerlab topology file the test reads.
type clabTopology struct {
	Name     string `yaml:"name"`
	Topology struct {
		Nodes map[string]struct {
			Kind   string   `yaml:"kind"`
			Image  string   `yaml:"image"`
			Cmd    string   `yaml:"cmd"`
			Binds  []string `yaml:"binds"`
			Exec   []string `yaml:"exec"`
			CapAdd []string `yaml:"cap-add"`
		} `yaml:"nodes"`
		Links []struct {
			Endpoints []string `yaml:"endpoints"`
		} `yaml:"links"`
	} `yaml:"topology"`
}

// The containerlab topology (not run here: no containerlab) holds
// together: its links join defined nodes, each linkfabric node's node file
// exists, loads as run's configuration, and names as ports the interfaces
// its links give the node, and the nodes get the unit's capabilities.
func TestContainerlabPair(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "containerlab")
	b, err := os.ReadFile(filepath.Join(dir, "pair.clab.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var topo clabTopology
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&topo); err != nil {
		t.Fatalf("pair.clab.yml: %v", err)
	}
	nodes := topo.Topology.Nodes
	if topo.Name == "" || len(nodes) != 4 || len(topo.Topology.Links) != 3 {
		t.Fatalf("pair.clab.yml: name %q, %d nodes, %d links; want a name, 4 nodes (two hosts, two linkfabric nodes) and 3 links", topo.Name, len(nodes), len(topo.Topology.Links))
	}
	ifaces := map[string][]string{} // node → its interfaces on links
	for i, l := range topo.Topology.Links {
		if len(l.Endpoints) != 2 {
			t.Errorf("link %d: %d endpoints, want 2", i, len(l.Endpoints))
		}
		for _, ep := range l.Endpoints {
			node, iface, ok := strings.Cut(ep, ":")
			if _, defined := nodes[node]; !ok || !defined {
				t.Errorf("link %d: endpoint %q is not NODE:IFACE of a defined node", i, ep)
				continue
			}
			if slices.Contains(ifaces[node], iface) {
				t.Errorf("link %d: %s used twice", i, ep)
			}
			ifaces[node] = append(ifaces[node], iface)
		}
	}
	unit, err := os.ReadFile("../../deploy/linkfabric@.service")
	if err != nil {
		t.Fatal(err)
	}
	var unitCaps []string
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "AmbientCapabilities="); ok {
			for _, c := range strings.Fields(v) {
				unitCaps = append(unitCaps, strings.TrimPrefix(c, "CAP_"))
			}
		}
	}
	lf := 0
	for name, n := range nodes {
		if n.Kind != "linux" || n.Image == "" {
			t.Errorf("node %s: kind %q image %q, want a linux node with an image", name, n.Kind, n.Image)
		}
		if len(ifaces[name]) == 0 {
			t.Errorf("node %s is on no link", name)
		}
		if !strings.HasPrefix(n.Image, "linkfabric:") {
			continue
		}
		lf++
		if !slices.Equal(slices.Sorted(slices.Values(n.CapAdd)), slices.Sorted(slices.Values(unitCaps))) {
			t.Errorf("node %s: cap-add %v, the unit's AmbientCapabilities %v", name, n.CapAdd, unitCaps)
		}
		args := strings.Fields(n.Cmd)
		i := slices.Index(args, "--config")
		if len(args) == 0 || args[0] != "run" || i < 0 || i+1 >= len(args) {
			t.Errorf("node %s: cmd %q, want run --config FILE", name, n.Cmd)
			continue
		}
		var file string
		for _, bind := range n.Binds {
			parts := strings.Split(bind, ":")
			if len(parts) >= 2 && parts[1] == args[i+1] {
				file = filepath.Join(dir, parts[0]) // containerlab: relative to the topology file
			}
		}
		if file == "" {
			t.Errorf("node %s: no bind mounts its node file %s", name, args[i+1])
			continue
		}
		printed, err := printConfig(t, "--config", file)
		if err != nil {
			t.Errorf("node %s: run --config %s: %v", name, file, err)
			continue
		}
		for _, key := range []string{"host-port", "link-port"} {
			m := regexp.MustCompile(`(?m)^` + key + `: (\S+)$`).FindStringSubmatch(printed)
			if m == nil || !slices.Contains(ifaces[name], m[1]) {
				t.Errorf("node %s: %s's %s is %v, not one of the node's link interfaces %v", name, file, key, m, ifaces[name])
			}
		}
		if regexp.MustCompile(`(?m)^netns: [^"\s]`).MatchString(printed) {
			t.Errorf("node %s: %s sets netns; in a container the ports are in the container's own namespace", name, file)
		}
	}
	if lf != 2 {
		t.Errorf("%d linkfabric nodes, want 2", lf)
	}
}
