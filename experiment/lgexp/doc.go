// Package lgexp holds the experiments on the pair testbed (h1 — sw1 — sw2
// — h2) that measure LinkGuardian and the forward path: `bench` (forward
// against the bridge), `fct` and `demo` (flow completion times under loss),
// `goodput`, `stress` (capacity and loss under load) and `chaos` (faults
// while TCP runs).
package lgexp
