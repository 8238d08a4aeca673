package main

// A node file: every flag of run as a YAML key of the same name, read by
// `run --config FILE`; flags given on the command line win over the file.
// The file is applied to the command's FlagSet after parsing, through each
// flag's own Set, so it covers every flag whichever package declares it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// notInNodeFile are run's flags that are not settings of a node: they
// act on the command itself.
var notInNodeFile = []string{"config", "print-config", "help", "help-all"}

// withNodeConfig gives cmd --config and --print-config: before cmd's RunE
// runs, the node file's keys set the flags not given on the command line,
// and --print-config prints the effective settings and returns. check, if
// not nil, runs after the file is applied and before RunE (not with
// --print-config or --help-all).
func withNodeConfig(cmd *cobra.Command, check func(cmd *cobra.Command) error) {
	var file string
	var print bool
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "node file: YAML, one key per flag (flags win; see --print-config)")
	f.BoolVar(&print, "print-config", false, "print the effective settings (the node file and the flags) as a node file, and exit")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return usageError{fmt.Errorf("--config: %w", err)}
			}
			fromFile, err := applyNodeConfig(cmd.Flags(), file, b)
			if err != nil {
				return usageError{err}
			}
			if slices.Contains(fromFile, "log-level") {
				if pre := cmd.Root().PersistentPreRun; pre != nil {
					pre(cmd, args) // the logger at the file's level
				}
			}
		}
		if print {
			return printNodeConfig(cmd.OutOrStdout(), cmd.Flags())
		}
		if h := cmd.Flags().Lookup("help-all"); check != nil && (h == nil || h.Value.String() != "true") {
			if err := check(cmd); err != nil {
				return err
			}
		}
		return run(cmd, args)
	}
}

// applyNodeConfig sets each flag that a key of the node file b (named
// file in errors) names and the command line did not change; it returns
// the keys it set. Errors name the file, the line and the key.
func applyNodeConfig(fs *pflag.FlagSet, file string, b []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("node file %s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("node file %s line %d: want a map of settings (key: value), one a line", file, m.Line)
	}
	at := func(n *yaml.Node, format string, a ...any) error {
		return fmt.Errorf("node file %s line %d: %s", file, n.Line, fmt.Sprintf(format, a...))
	}
	// Given on the command line: a flag, or its former name (which sets
	// the same value but is Changed on its own).
	given := map[string]bool{}
	fs.Visit(func(fl *pflag.Flag) {
		given[fl.Name] = true
		if fl.Deprecated != "" {
			given[runRenamed[fl.Name]] = true
		}
	})
	seen := map[string]int{}
	var set []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, at(k, "a key must be a flag's name")
		}
		name := k.Value
		if line, ok := seen[name]; ok {
			return nil, at(k, "key %q given twice (first on line %d)", name, line)
		}
		seen[name] = k.Line
		fl := fs.Lookup(name)
		switch {
		case fl == nil:
			return nil, at(k, "unknown key %q (the keys are run's flags without the dashes: `linkfabric run --print-config` lists them)", name)
		case slices.Contains(notInNodeFile, name):
			return nil, at(k, "%q is not a setting of the node (give --%s on the command line)", name, name)
		case fl.Deprecated != "":
			return nil, at(k, "%q is the former name of %q: write %s: instead", name, runRenamed[name], runRenamed[name])
		}
		val, err := nodeValue(v)
		if err != nil {
			return nil, at(v, "%s: %v", name, err)
		}
		if given[name] {
			continue // the command line wins
		}
		if err := fs.Set(name, val); err != nil {
			return nil, at(v, "%s: %v", name, err)
		}
		set = append(set, name)
	}
	return set, nil
}

// nodeValue is the text a node file's value gives its flag: a scalar as
// written, a list of scalars joined by commas (the flags' list form).
func nodeValue(v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "", errors.New("no value (write \"\" for an empty one)")
		}
		return v.Value, nil
	case yaml.SequenceNode:
		var items []string
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				return "", errors.New("a list takes plain values only")
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", errors.New("want a value (or a list of values), not a map")
}

// printNodeConfig writes every setting of fs as a node file: each flag a
// node file takes, with its effective value.
func printNodeConfig(w io.Writer, fs *pflag.FlagSet) error {
	m := &yaml.Node{Kind: yaml.MappingNode}
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Deprecated != "" || slices.Contains(notInNodeFile, fl.Name) {
			return
		}
		// Strings tagged as such are quoted where YAML would read them
		// otherwise ("", "true"); numbers, booleans and durations plain,
		// an empty value of any type as "".
		tag := ""
		if fl.Value.Type() == "string" || fl.Value.String() == "" {
			tag = "!!str"
		}
		m.Content = append(m.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: fl.Name},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: fl.Value.String()})
	})
	var buf bytes.Buffer
	buf.WriteString("# linkfabric run: the effective settings (a node file for --config)\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
