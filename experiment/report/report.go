// Package report writes and summarises the experiments' results: JSON and
// CSV files, medians, nearest-rank percentiles and ratios, and the plots
// they share. It imports nothing of the project, so every experiment and
// the fct package can use it.
package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// marshal returns v as JSON indented by two spaces, with a final newline:
// the bytes Encode and WriteJSON write.
func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Encode writes v to w as JSON indented by two spaces, with a final newline.
func Encode(w io.Writer, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteJSON writes v as indented JSON (as Encode) to path, creating its
// directory.
func WriteJSON(path string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Sprint returns what write writes: a result's text from the function that
// prints it.
func Sprint(write func(w io.Writer)) string {
	var b strings.Builder
	write(&b)
	return b.String()
}

// WriteFile creates path (and its directory) and lets write fill it.
func WriteFile(path string, write func(w io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteCSV writes a header and rows to path, creating its directory.
func WriteCSV(path string, header []string, rows [][]string) error {
	return WriteFile(path, func(f io.Writer) error {
		w := csv.NewWriter(f)
		w.Write(header)
		w.WriteAll(rows)
		return w.Error()
	})
}

// WriteTable writes v as name.json and the header and rows as name.csv into
// dir, and returns the two paths.
func WriteTable(dir, name string, v any, header []string, rows [][]string) ([]string, error) {
	j := filepath.Join(dir, name+".json")
	if err := WriteJSON(j, v); err != nil {
		return nil, err
	}
	c := filepath.Join(dir, name+".csv")
	return []string{j, c}, WriteCSV(c, header, rows)
}

// WriteTablePlot is WriteTable, then plot draws dir/png: it returns the
// paths it wrote, also those before an error.
func WriteTablePlot(dir, name string, v any, header []string, rows [][]string, png string, plot func(path string) error) ([]string, error) {
	files, err := WriteTable(dir, name, v, header, rows)
	if err != nil {
		return files, err
	}
	path := filepath.Join(dir, png)
	if err := plot(path); err != nil {
		return files, err
	}
	return append(files, path), nil
}
