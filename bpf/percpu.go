package bpf

import (
	"unsafe"

	"github.com/cilium/ebpf"
)

// sumPerCPU reads slot 0 of the per-CPU array m and returns its counters
// summed over the CPUs. V, the program's value, and S, Go's view of it,
// are each nothing but the same uint64 counters in the same order (V may
// add its zero-size layout marker); TestPerCPUCounterLayouts holds them to
// it.
func sumPerCPU[S, V any](m *ebpf.Map) (S, error) {
	var per []V
	if err := m.Lookup(uint32(0), &per); err != nil {
		var zero S
		return zero, err
	}
	return sumCounters[S](per), nil
}

// sumCounters adds up per's counters into an S (see sumPerCPU).
func sumCounters[S, V any](per []V) S {
	var s S
	n := int(unsafe.Sizeof(s) / 8)
	if unsafe.Sizeof(*new(V)) != unsafe.Sizeof(s) {
		panic("bpf: per-CPU counters and their Go view differ in size")
	}
	sum := unsafe.Slice((*uint64)(unsafe.Pointer(&s)), n)
	for i := range per {
		for k, v := range unsafe.Slice((*uint64)(unsafe.Pointer(&per[i])), n) {
			sum[k] += v
		}
	}
	return s
}
