// Package bpf holds linkfabric's eBPF/XDP programs and the Go API that loads,
// attaches and configures them.
//
// Two programs share one impairment stage (c/impair.h):
//
//   - the dataplane port program (lf_port, AttachPort): counts every frame,
//     drops link control a host may not send, applies the impairment stage
//     when enabled, then redirects the frame either to the other port of
//     mode forward through a devmap (the fast path, SetFast) or to the AF_XDP
//     socket registered for its RX queue in an XSKMAP, or passes it to the
//     kernel stack when that queue has none. Each Port loads its own copy of
//     the maps and is attached through a bpf_link, so it is detached when the
//     Port is closed or the process dies;
//   - the standalone impairer (lf_impair, AttachImpairer): the impairment
//     stage, then XDP_PASS, for interfaces that run no dataplane (the
//     unprotected baseline). It is attached through netlink and outlives the
//     process until DetachImpairer.
//
// # Jumbo frames
//
// Both programs are loaded with frags (section "xdp.frags", that is
// BPF_F_XDP_HAS_FRAGS): they take multi-buffer frames, so native XDP attaches
// to a veth at any MTU (without frags veth refuses an MTU above 3506, a page
// less headroom), the fast path's devmap redirect carries jumbo frames, and
// an AF_XDP socket bound with XDP_USE_SG receives them as a chain of
// descriptors (package xdp). They read only the linear part (the first
// page, which holds every header they look at), count whole frames, and
// the impairment stage flips a bit anywhere in the frame.
//
// FeatureReader reads the XDP features a device advertises (netdev generic
// netlink), among them whether frames may be redirected into it.
//
// The impairment stage drops frames by a Bernoulli or Gilbert-Elliott model
// and optionally flips one bit of a frame's payload; see ImpairConfig. Its
// configuration lives in a map the program reads on every frame, so it can be
// changed while traffic flows, from the owning process or from any other one
// via OpenImpairer.
//
// # Network namespaces
//
// Every function that takes an interface name resolves it in the network
// namespace of the calling OS thread. Callers that work in another namespace
// lock the goroutine to its thread (runtime.LockOSThread), switch the thread
// (e.g. vishvananda/netns Set), call, and switch back. eBPF programs and maps
// themselves are not namespaced: a Port or Impairer handle keeps working from
// any thread once obtained.
//
// # Privileges
//
// Loading and attaching need root or CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON;
// OpenImpairer (which looks programs and maps up by ID) needs CAP_SYS_ADMIN.
//
// # Regenerating
//
// The compiled objects (*_bpfel.o) and their bindings are committed;
// `go generate ./bpf/` rebuilds them with clang (see gen.go). They are
// built for little-endian hosts only (amd64, arm64, riscv64, ppc64le, ...):
// AF_XDP dataplanes run there, and a big-endian copy of every binding
// would be code kept for a machine nobody tests on.
package bpf
