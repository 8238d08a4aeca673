// Package tdmaexp holds the TDMA experiments (package tdma) on a star of
// hosts and their command, `linkfabric tdma`; the testbed they share with
// the others is package bed, and the fabric manager and host agents they
// start are the commands of package tdmacli.
package tdmaexp
