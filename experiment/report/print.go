package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// PrintJSON writes v as indented JSON to stdout.
func PrintJSON(v any) error { return Encode(os.Stdout, v) }

// Print reports an experiment's result: as JSON to the file outJSON (unless
// empty), then to stdout as JSON (asJSON) or as its text.
func Print(res any, text string, outJSON string, asJSON bool) error {
	if outJSON != "" {
		if err := WriteJSON(outJSON, res); err != nil {
			return err
		}
	}
	if asJSON {
		return PrintJSON(res)
	}
	fmt.Print(text)
	if outJSON != "" {
		fmt.Printf("\nJSON: %s\n", filepath.Clean(outJSON))
	}
	return nil
}

// PrintWritten prints res as JSON (asJSON) or as its text, then the files
// the experiment wrote.
func PrintWritten(res any, text string, files []string, asJSON bool) error {
	if asJSON {
		return PrintJSON(res)
	}
	fmt.Print(text)
	if len(files) > 0 {
		fmt.Printf("\nwritten: %s\n", strings.Join(files, " "))
	}
	return nil
}

// JSONUsage is the help of every command's --json switch.
const JSONUsage = "print JSON on stdout instead of the text"

// OutFlags are the --out and --json flags of an experiment whose result is
// one JSON document beside its text table.
type OutFlags struct {
	Out    string // --out: write the result as JSON to this file ('' to skip)
	AsJSON bool   // --json: print JSON instead of the table
}

// Add declares --out, with the file path as its default, and --json.
func (o *OutFlags) Add(f *pflag.FlagSet, path string) {
	f.StringVar(&o.Out, "out", path, "write the result as JSON here ('' to skip)")
	f.BoolVar(&o.AsJSON, "json", false, JSONUsage)
}

// Print writes res to --out and prints it, as Print does.
func (o *OutFlags) Print(res any, text string) error { return Print(res, text, o.Out, o.AsJSON) }

// FileResult is a result that writes its own files (JSON, CSV, plots) into
// a directory.
type FileResult interface {
	Text() string
	WriteFiles(dir string) ([]string, error)
}

// PrintFiles writes res's files into dir (unless empty) and prints res as
// PrintWritten does.
func PrintFiles(res FileResult, dir string, asJSON bool) error {
	var files []string
	if dir != "" {
		var err error
		if files, err = res.WriteFiles(dir); err != nil {
			return err
		}
	}
	return PrintWritten(res, res.Text(), files, asJSON)
}

// Report prints an experiment's result as Print does, or returns the
// error that ended the experiment.
func (o *OutFlags) Report(res interface{ Text() string }, err error) error {
	if err != nil {
		return err
	}
	return o.Print(res, res.Text())
}
