// Package lgpipe runs LinkGuardian in the engine (package dataplane): the
// modes lg, lgnb and monitor (registered with dataplane.Register when the
// package is imported), their configuration (Config, ConfigOf) and
// statistics, the kernel's fast paths for them, and the LinkGuardian link
// layer under the cells (--cells-link-mode lg).
package lgpipe
