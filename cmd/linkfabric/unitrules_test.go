package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// A snake_case name (a JSON key, a summary key or a piece of one, a
	// CSV column, a log key) that gives a rate in another unit than bit/s.
	otherRateUnit = regexp.MustCompile(`^[a-z0-9_.-]*(^|_)(kbps|mbps|gbps|tbps|kbit|mbit|gbit|mb_s|gb_s)(_[a-z0-9_.-]*)?$`)
	// A name that gives a loss as a percentage.
	lossPercent = regexp.MustCompile(`^[a-z0-9_.-]*(loss|lost)[a-z0-9_.-]*_(pct|percent)([a-z0-9_.-]*)?$|^[a-z0-9_.-]*(pct|percent)_(of_)?(loss|lost)[a-z0-9_.-]*$`)
	// A formatting verb, as in a key built with fmt.Sprintf("%s_tcp_bps", arm).
	fmtVerb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
)

// unitProblems checks one Go file's machine output names: every JSON tag,
// and every string literal shaped like a key (summary keys built with +,
// CSV headers, log keys). A rate is bit/s (suffix _bps), a loss a fraction,
// and a field of type BitRate (a rate written with netns's units) is
// tagged ..._bps.
func unitProblems(fset *token.FileSet, f *ast.File) []string {
	var out []string
	bad := func(pos token.Pos, what, name string) {
		out = append(out, fset.Position(pos).String()+": "+what+" "+strconv.Quote(name))
	}
	check := func(pos token.Pos, what, name string) {
		key := fmtVerb.ReplaceAllString(name, "x")
		switch {
		case otherRateUnit.MatchString(key):
			bad(pos, what+" gives a rate not in bit/s (want _bps):", name)
		case lossPercent.MatchString(key):
			bad(pos, what+" gives a loss as a percentage (want a fraction):", name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if n.Tag == nil {
				return true
			}
			tag, err := strconv.Unquote(n.Tag.Value)
			if err != nil {
				return true
			}
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name == "" || name == "-" {
				return true
			}
			check(n.Tag.Pos(), "JSON tag", name)
			if isBitRate(n.Type) && !strings.HasSuffix(name, "_bps") {
				bad(n.Tag.Pos(), "a BitRate (bit/s) tagged without _bps:", name)
			}
			return false
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if s, err := strconv.Unquote(n.Value); err == nil {
					check(n.Pos(), "name", s)
				}
			}
		}
		return true
	})
	return out
}

// isBitRate says whether t is BitRate, netns.BitRate or a slice of either.
func isBitRate(t ast.Expr) bool {
	if a, ok := t.(*ast.ArrayType); ok {
		t = a.Elt
	}
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name == "BitRate"
	case *ast.SelectorExpr:
		return t.Sel.Name == "BitRate"
	}
	return false
}

// TestMachineOutputUnits: rates in the machine output are bit/s and named
// ..._bps, losses fractions (docs/commands.md, "Machine output"), over
// every Go file of the module.
func TestMachineOutputUnits(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, p := range unitProblems(fset, f) {
			t.Error(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s; want the whole module", files, root)
	}
}

// The check finds what it is for, and passes what is right.
func TestUnitProblemsCatches(t *testing.T) {
	src := `package p
type Bad struct {
	TCP   float64  ` + "`json:\"tcp_gbps\"`" + `
	Load  float64  ` + "`json:\"load_mbps,omitempty\"`" + `
	Lost  float64  ` + "`json:\"loss_pct\"`" + `
	Rate  BitRate  ` + "`json:\"rate\"`" + `
	Loads []netns.BitRate ` + "`json:\"loads\"`" + `
}
type Good struct {
	TCP   float64  ` + "`json:\"tcp_bps\"`" + `
	Loss  float64  ` + "`json:\"loss_rate\"`" + `
	CPU   float64  ` + "`json:\"cpu_busy_pct\"`" + `
	Rate  BitRate  ` + "`json:\"port_rate_bps\"`" + `
}
func f(s map[string]any, arm string) {
	s[arm+"_gbps"] = 1
	s[arm+"_tcp_bps"] = 1
	_ = []string{"run", "mbps", "lost_percent"}
	_ = fmt.Sprintf("%s_tcp_gbps", arm)
	s["lg_gbps_at_0.001"], s["lg_bps_at_0.001"], s["kill-sw1_udp_loss"] = 1, 1, 1e-3
	_ = "TCP %.2f Gbit/s, loss %.1f %%"
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := unitProblems(fset, f)
	want := []string{`"tcp_gbps"`, `"load_mbps"`, `"loss_pct"`, `"rate"`, `"loads"`, `"_gbps"`, `"mbps"`, `"lost_percent"`, `"%s_tcp_gbps"`, `"lg_gbps_at_0.001"`}
	if len(got) != len(want) {
		t.Fatalf("found %d:\n%s\nwant %d, about %v", len(got), strings.Join(got, "\n"), len(want), want)
	}
	for i, w := range want {
		if !strings.HasSuffix(got[i], w) {
			t.Errorf("finding %d: %s; want one about %s", i, got[i], w)
		}
	}
}
