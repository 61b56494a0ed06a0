package core

import (
	"math"
	"testing"
)

func TestSaturatingArithmeticClampsInsteadOfWrapping(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	cases := []struct {
		name      string
		got, want int64
	}{
		{"add up", satAdd(max, 1), max}, {"add down", satAdd(min, -1), min}, {"add", satAdd(-3, 5), 2},
		{"sub up", satSub(max, -1), max}, {"sub down", satSub(min, 1), min}, {"sub", satSub(3, 5), -2},
		{"mul up", satMul(max, 2), max}, {"mul down", satMul(min, 2), min}, {"mul min by -1", satMul(min, -1), max},
		{"mul -1 by min", satMul(-1, min), max}, {"mul neg", satMul(-max, 3), min}, {"mul", satMul(-4, 5), -20},
		{"mul zero", satMul(0, min), 0},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}
