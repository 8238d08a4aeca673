package bpf

import (
	"reflect"
	"testing"
)

// TestPerCPUCounterLayouts: each per-CPU counter value the programs write
// and Go's view of it hold the same uint64 counters in the same order
// (names differ only where listed), and sumCounters adds each counter of
// every CPU into the field of its name.
func TestPerCPUCounterLayouts(t *testing.T) {
	for _, c := range []struct {
		sum     func(per any) any
		s, v    reflect.Type
		renamed map[string]string // program's name → Go's
	}{
		{func(per any) any { return sumCounters[ProgCounters](per.([]portPortCounters)) },
			reflect.TypeFor[ProgCounters](), reflect.TypeFor[portPortCounters](),
			map[string]string{"HostMacCtl": "HostMACControl", "ForeignCtl": "ForeignControl",
				"FwdFrames": "Forwarded", "FwdBytes": "ForwardedBytes", "FwdMissed": "ForwardMissed"}},
		{func(per any) any { return sumCounters[TDMAGateCounters](per.([]tdmagateTdmaGateCounters)) },
			reflect.TypeFor[TDMAGateCounters](), reflect.TypeFor[tdmagateTdmaGateCounters](), nil},
		{func(per any) any { return sumCounters[ImpairStats](per.([]impairerImpairStats)) },
			reflect.TypeFor[ImpairStats](), reflect.TypeFor[impairerImpairStats](), nil},
	} {
		var vf []reflect.StructField
		for i := range c.v.NumField() {
			if f := c.v.Field(i); f.Name != "_" {
				vf = append(vf, f)
			}
		}
		if len(vf) != c.s.NumField() {
			t.Fatalf("%v has %d counters, %v %d", c.v, len(vf), c.s, c.s.NumField())
		}
		// Two CPUs: counter k is k+1 on one, 100(k+1) on the other.
		per := reflect.MakeSlice(reflect.SliceOf(c.v), 2, 2)
		for k, f := range vf {
			sf := c.s.Field(k)
			name := f.Name
			if r, ok := c.renamed[name]; ok {
				name = r
			}
			if sf.Name != name || f.Type.Kind() != reflect.Uint64 || sf.Type.Kind() != reflect.Uint64 {
				t.Fatalf("%v counter %d: %s %v, %v has %s %v", c.v, k, f.Name, f.Type, c.s, sf.Name, sf.Type)
			}
			per.Index(0).FieldByIndex(f.Index).SetUint(uint64(k + 1))
			per.Index(1).FieldByIndex(f.Index).SetUint(uint64(100 * (k + 1)))
		}
		got := reflect.ValueOf(c.sum(per.Interface()))
		for k := range c.s.NumField() {
			if v := got.Field(k).Uint(); v != uint64(101*(k+1)) {
				t.Fatalf("%v.%s sums to %d, want %d", c.s, c.s.Field(k).Name, v, 101*(k+1))
			}
		}
	}
}
