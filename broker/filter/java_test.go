package filter

import (
	"math"
	"testing"
)

func TestJavaParseInteger(t *testing.T) {
	tests := []struct {
		s        string
		min, max int64
		want     int64
		ok       bool
	}{
		{"0", math.MinInt32, math.MaxInt32, 0, true},
		{"+7", math.MinInt32, math.MaxInt32, 7, true},
		{"-2147483648", math.MinInt32, math.MaxInt32, math.MinInt32, true},
		{"2147483647", math.MinInt32, math.MaxInt32, math.MaxInt32, true},
		{"2147483648", math.MinInt32, math.MaxInt32, 0, false},
		{"-2147483649", math.MinInt32, math.MaxInt32, 0, false},
		{"2147483648", math.MinInt64, math.MaxInt64, 2147483648, true},
		{"-9223372036854775808", math.MinInt64, math.MaxInt64, math.MinInt64, true},
		{"9223372036854775808", math.MinInt64, math.MaxInt64, 0, false},
		{"99999999999999999999", math.MinInt64, math.MaxInt64, 0, false},
		{"007", math.MinInt32, math.MaxInt32, 7, true},
		{"\uff15", math.MinInt32, math.MaxInt32, 5, true},      // FULLWIDTH DIGIT FIVE
		{"1\u0669", math.MinInt32, math.MaxInt32, 19, true},    // ARABIC-INDIC DIGIT NINE
		{"\U0001D7CF", math.MinInt32, math.MaxInt32, 0, false}, // supplementary: two chars in Java
		{"", math.MinInt32, math.MaxInt32, 0, false},
		{"-", math.MinInt32, math.MaxInt32, 0, false},
		{"+-1", math.MinInt32, math.MaxInt32, 0, false},
		{" 1", math.MinInt32, math.MaxInt32, 0, false},
		{"1.0", math.MinInt32, math.MaxInt32, 0, false},
		{"1_000", math.MinInt32, math.MaxInt32, 0, false},
		{"0x10", math.MinInt32, math.MaxInt32, 0, false},
	}
	for _, tt := range tests {
		got, ok := javaParseInteger(tt.s, tt.min, tt.max)
		if got != tt.want || ok != tt.ok {
			t.Errorf("javaParseInteger(%q, %d, %d) = %d, %v; want %d, %v", tt.s, tt.min, tt.max, got, ok, tt.want, tt.ok)
		}
	}
}

func TestJavaParseDouble(t *testing.T) {
	tests := []struct {
		s    string
		want float64
		ok   bool
	}{
		{"1", 1, true},
		{"-2.5", -2.5, true},
		{"+.5", 0.5, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"1E-3", 0.001, true},
		{"1.5e+2", 150, true},
		{"  7\t", 7, true},
		{"2.5f", 2.5, true},
		{"2.5D", 2.5, true},
		{"0x1p3", 8, true},
		{"-0X1.8P1d", -3, true},
		{"Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"1e400", math.Inf(1), true},
		{"1e-400", 0, true},
		{"", 0, false},
		{".", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"inf", 0, false},
		{"infinity", 0, false},
		{"nan", 0, false},
		{"1_0", 0, false},
		{"0x1", 0, false}, // hex needs a binary exponent
		{"0x_1p3", 0, false},
		{"1ff", 0, false},
		{"\u0663", 0, false},
		{"1,5", 0, false},
	}
	for _, tt := range tests {
		got, ok := javaParseDouble(tt.s)
		if got != tt.want || ok != tt.ok {
			t.Errorf("javaParseDouble(%q) = %v, %v; want %v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
	if f, ok := javaParseDouble("-NaN"); !ok || !math.IsNaN(f) {
		t.Errorf("javaParseDouble(-NaN) = %v, %v; want NaN", f, ok)
	}
}

func TestCompareDouble(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	tests := []struct {
		a, b float64
		want int
	}{
		{1, 2, -1},
		{2, 1, 1},
		{1, 1, 0},
		{negZero, 0, -1},
		{0, negZero, 1},
		{nan, nan, 0},
		{nan, math.Inf(1), 1},
		{math.Inf(-1), nan, -1},
		{-1, nan, -1},
	}
	for _, tt := range tests {
		if got := compareDouble(tt.a, tt.b); got != tt.want {
			t.Errorf("compareDouble(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
