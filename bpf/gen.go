package bpf

// The compiled objects and their Go bindings are committed, so building the
// module needs no clang. `go generate ./bpf/` rebuilds them (needs clang,
// libbpf-dev and, on Debian amd64, the multiarch include path for asm/types.h).
// c/crc32c_table.h, the CRC32C tables of the port program, is generated
// from hash/crc32 first (internal/crc32ctab).

//go:generate go run gen_crc32c_table.go
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type impair_config -type impair_state -type impair_stats -go-package bpf impairer c/impairer.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu" -target bpfel -type port_counters -type port_conf -type lg_rx_shared -type lg_tx_shared -type cell_shared -type cell_counters -type cell_tx_shared -type cell_tx_voq -type cell_tx_dest -type cell_rx_shared -type cell_rx_stream -type cell_rx_counters -go-package bpf port c/port.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type tdma_gate_conf -type tdma_gate_counters -go-package bpf tdmagate c/tdmagate.c
