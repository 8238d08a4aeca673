package metrics

import (
	"runtime"
	"runtime/debug"
)

// BuildInfo is the version, the VCS revision and the Go version the
// binary was built with ("unknown" where the build did not record one).
func BuildInfo() (version, revision, goversion string) {
	version, revision, goversion = "unknown", "unknown", runtime.Version()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := bi.Main.Version; v != "" {
		version = v
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && revision != "unknown" {
		revision += "-dirty"
	}
	return
}

// RegisterBuildInfo registers linkfabric_build_info{version, revision,
// goversion} 1, the conventional way to export what is running.
func RegisterBuildInfo(r *Registry) error {
	v, rev, gov := BuildInfo()
	return r.GaugeFunc("linkfabric_build_info", "The running binary: module version, VCS revision and Go version (value 1).",
		func() float64 { return 1 }, "version", v, "revision", rev, "goversion", gov)
}
