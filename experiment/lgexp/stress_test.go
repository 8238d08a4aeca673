package lgexp

import "testing"

// bisect converges on the highest passing rate to within max/2^steps, and
// reports what the trials achieved, not what was asked.
func TestBisect(t *testing.T) {
	const capacity = 123_456.0
	var asked []float64
	got, err := bisect(400_000, 8, func(rate float64) (float64, bool, error) {
		asked = append(asked, rate)
		return rate * 0.99, rate <= capacity, nil
	})
	if err != nil || len(asked) != 8 || asked[0] != 200_000 {
		t.Fatalf("bisect: err %v, asked %v", err, asked)
	}
	if res := 400_000.0 / 256; got > capacity*0.99 || got < (capacity-res)*0.99 {
		t.Fatalf("bisect found %.0f; want within %.0f below %.0f × 0.99", got, res, capacity)
	}
	if got, _ := bisect(400_000, 5, func(float64) (float64, bool, error) { return 1, false, nil }); got != 0 {
		t.Fatalf("nothing passed, yet bisect found %v", got)
	}
}
