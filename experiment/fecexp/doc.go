// Package fecexp holds the experiments of FEC (package fec, RAIL's XOR
// parity and replication) behind `linkfabric fec`: the residual loss and
// overhead in the simulator and on veth pairs (residual), the table behind
// the link policy (table), and the flow completion times of FEC under cells
// on the bundle's gray links (fct).
package fecexp
