package core

import "math"

// satAdd returns a+b clamped to the int64 range.
func satAdd(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// satSub returns a-b clamped to the int64 range.
func satSub(a, b int64) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		if b > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return s
}

// satMul returns a*b clamped to the int64 range.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a < 0) == (b < 0) {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}

// SatAdd returns a+b clamped to the int64 range: the arithmetic every instant
// of the lease clock uses (exported for the stateful client, core/coord).
func SatAdd(a, b int64) int64 { return satAdd(a, b) }

// SatSub returns a-b clamped to the int64 range.
func SatSub(a, b int64) int64 { return satSub(a, b) }
