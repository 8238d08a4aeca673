// Package linkpipe is what the link mechanisms' pipelines share on top of
// the engine (package dataplane): the link session of a pipeline with one
// link port (LinkSess, used by LinkGuardian's and FEC's), and the contract
// between the cells and the link layers under them (Layer, Cells, LayerSpec,
// RegisterLayer, LayerSession, and the layers' snapshot CellLinkLG).
package linkpipe
