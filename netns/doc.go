// Package netns builds linkfabric testbeds: network namespaces joined by
// veth pairs, with addresses, MTUs, offloads, bridges, routes and sysctls,
// and tears them down again.
//
// Topologies are data (Topology, loadable from YAML; built-in presets
// "pair" and "bundle", see Presets). The "pair" preset is
//
//	h1 ──eth0|host0── sw1 ──link0|link0── sw2 ──host0|eth0── h2
//
// with namespaces <prefix>h1, <prefix>sw1, <prefix>sw2, <prefix>h2,
// 10.0.0.1/24 on h1 eth0 and 10.0.0.2/24 on h2 eth0. Link ports get
// MTU = host MTU + LinkHeaderLen for the dataplane's link header, or a
// topology's link_mtu where that is larger (fabric3's, for larger cells).
//
// Up creates a testbed, SetForwarding switches the switches between a Linux
// bridge ("kernel", the baseline) and bare ports ("none", for the
// dataplane), Status reports what exists and Down removes it. Do, Command,
// Sysctl, SetRouteRTOMin and WaitPing run things inside a namespace.
//
// Every namespace made here is marked with the ifalias
// "linkfabric:<prefix>" on its lo; Down and Status act only on namespaces
// carrying exactly that marker, so other prefixes are never touched. Up
// records each testbed in /run/linkfabric/testbeds/<prefix>.json.
package netns
