// Package tdmaexp holds the TDMA experiments (package tdma, behind
// `linkfabric tdma`) on a star of hosts; the testbed they share with the
// others is package bed. Command-line parsing stays in cmd/linkfabric.
package tdmaexp
