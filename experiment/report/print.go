package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
