// Package enum names the values of small integer enumerations from a
// table, so that each type's String is one line and its names one list.
package enum

import "fmt"

// Name is names[v], or "typ(v)" for a value without a name.
func Name[T ~int | ~uint8 | ~uint32](v T, typ string, names []string) string {
	if v >= 0 && uint64(v) < uint64(len(names)) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}
