// Package fecpipe runs forward error correction in the engine (package
// dataplane): mode fec (registered with dataplane.Register when the package
// is imported), its configuration (Config, ConfigOf) and statistics,
// and the fec link layer under the cells (--cells-link-mode fec).
package fecpipe
