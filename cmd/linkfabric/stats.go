package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func statsCmd() *cobra.Command {
	var ns, addr string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --netns NS [--json]",
		Short: "Read the counters of a running dataplane",
		Long: `stats reads the statistics endpoint of 'linkfabric run' in namespace NS
(its --metrics address, on the namespace's own loopback).`,
		Example: `  linkfabric stats --netns lfsw2
  linkfabric stats --netns lfsw2 --json | jq .linkguardian.retx_delay_us`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.EnterNetns(ns); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stats.json", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("no dataplane answers at %s in namespace %q: %w (is `linkfabric run --netns %s` running, with --metrics %s?)", addr, ns, err, ns, addr)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if asJSON {
				_, err = os.Stdout.Write(body)
				return err
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				return fmt.Errorf("statistics from %s: %w", addr, err)
			}
			for _, line := range sessionLines(doc) {
				fmt.Println(line)
			}
			printTree("", doc)
			return nil
		},
	}
	cmd.Flags().StringVar(&ns, "netns", "", "namespace of the running dataplane")
	cmd.Flags().StringVar(&addr, "metrics", defaultMetricsAddr, "the dataplane's --metrics address")
	cmd.Flags().BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}

// sessionLines heads the counters with each link session's state, and
// what does not fit the peer when it is in mismatch.
func sessionLines(doc map[string]any) []string {
	var out []string
	for _, mech := range []string{"linkguardian", "fec"} {
		m, _ := doc[mech].(map[string]any)
		s, _ := m["session"].(map[string]any)
		if s == nil {
			continue
		}
		line := fmt.Sprintf("link session (%s): %v", mech, s["state"])
		if why, _ := s["mismatch"].(string); why != "" {
			line += ": " + why
		}
		out = append(out, line)
	}
	return out
}

// printTree prints a decoded JSON document as indented key: value lines.
func printTree(indent string, v any) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			switch c := t[k].(type) {
			case map[string]any, []any:
				fmt.Printf("%s%s:\n", indent, k)
				printTree(indent+"  ", c)
			default:
				fmt.Printf("%s%s: %v\n", indent, k, c)
			}
		}
	case []any:
		for i, e := range t {
			fmt.Printf("%s[%d]\n", indent, i)
			printTree(indent+"  ", e)
		}
	default:
		fmt.Printf("%s%v\n", indent, t)
	}
}
