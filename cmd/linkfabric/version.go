package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/spf13/cobra"
)

// buildInfo is what `linkfabric version` reports of this build.
type buildInfo struct {
	Version   string `json:"version"`            // the module's version, "(devel)" from a checkout
	Revision  string `json:"revision,omitempty"` // the commit built from
	Time      string `json:"time,omitempty"`     // the commit's time
	Modified  bool   `json:"modified"`           // the work tree had changes
	Go        string `json:"go"`
	Flags     string `json:"build_flags,omitempty"` // -tags, -trimpath, CGO_ENABLED, GOARCH...
	BPFObject string `json:"bpf_objects"`           // ObjectsHash of the embedded programs
}

func readBuildInfo() buildInfo {
	v := buildInfo{Version: "(unknown)", BPFObject: bpf.ObjectsHash()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version, v.Go = bi.Main.Version, bi.GoVersion
	var flags []string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs":
		default:
			if s.Value != "" {
				flags = append(flags, s.Key+"="+s.Value)
			}
		}
	}
	v.Flags = strings.Join(flags, " ")
	return v
}

// String is the one line --version prints.
func (v buildInfo) String() string {
	s := v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " commit " + rev
		if v.Modified {
			s += " (modified)"
		}
	}
	return s + " " + v.Go + " bpf " + v.BPFObject
}

func versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version, build flags and BPF objects of this build",
		Example: `  linkfabric version
  linkfabric version --json | jq -r .revision
  linkfabric --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readBuildInfo()
			out := cmd.OutOrStdout()
			if asJSON {
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				return e.Encode(v)
			}
			fmt.Fprintf(out, "linkfabric %s\n", v.Version)
			if v.Revision != "" {
				fmt.Fprintf(out, "commit      %s (%s)%s\n", v.Revision, v.Time, map[bool]string{true: ", modified", false: ""}[v.Modified])
			}
			fmt.Fprintf(out, "go          %s\nbuild flags %s\nbpf objects %s\n", v.Go, v.Flags, v.BPFObject)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}
