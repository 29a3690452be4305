package filter

import (
	"errors"
	"testing"
)

var fuzzProps = []map[string]string{
	nil,
	{"a": "10", "b": "x", "c": "2.5", "TAGS": "TagA"},
	{"a": "abc", "b": "", "c": "NaN", "d": "true"},
}

// FuzzCompileSQL92 checks that no input panics or hangs the compiler or the
// evaluator, that errors are SyntaxErrors with a position inside the input,
// and that Match agrees with Evaluate.
func FuzzCompileSQL92(f *testing.F) {
	for _, s := range []string{
		"a > 5 AND b = 'x'", "a BETWEEN 1 AND 10", "b NOT IN ('x', 'y')",
		"x IS NOT NULL OR NOT (c < -1.5e3)", "TRUE", "'it''s' = b", "(((a)))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := CompileSQL92(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T %v is not a *SyntaxError", src, err, err)
			}
			if se.Pos < 1 || se.Pos > len([]rune(src))+1 {
				t.Fatalf("%q: position %d outside the input", src, se.Pos)
			}
			return
		}
		for _, p := range fuzzProps {
			v, err := e.Evaluate(p)
			if err != nil && !errors.Is(err, ErrEvaluation) {
				t.Fatalf("%q: evaluation error %v does not wrap ErrEvaluation", src, err)
			}
			if e.Match(p) != (err == nil && v == True) {
				t.Fatalf("%q: Match disagrees with Evaluate = %v, %v", src, v, err)
			}
		}
	})
}
