// Package cellspipe runs the cells in the engine (package dataplane): mode
// cells (registered with dataplane.Register when the package is imported),
// its configuration (Config, ConfigOf) and statistics. The link
// layers under the cells register themselves (linkpipe.RegisterLayer).
package cellspipe
