//go:build ignore

// Writes c/crc32c_table.h (go generate ./bpf/).
package main

import (
	"log"
	"os"

	"github.com/linkfabric/linkfabric/bpf/internal/crc32ctab"
)

func main() {
	if err := os.WriteFile("c/crc32c_table.h", crc32ctab.Header(), 0o644); err != nil {
		log.Fatal(err)
	}
}
