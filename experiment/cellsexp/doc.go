// Package cellsexp holds the experiments of the cell fabric (package
// cellify, `linkfabric run --mode cells`) behind `linkfabric cells`: incast
// and push/pull on the fabric presets; packing, balance, elephants and
// latency on the bundle; failover, gray links and loss classes over the
// bundle's links.
package cellsexp
