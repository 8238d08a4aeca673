// Package ptr copies what an optional (pointer) field points to, so that a
// snapshot handed out does not share it with the original.
package ptr

// Copy returns a pointer to a copy of *p, or nil if p is nil.
func Copy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
