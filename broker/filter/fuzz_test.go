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
// that filter.New agrees, and that evaluation is deterministic and agrees
// with Match, also against properties that give every identifier of the
// expression the value of one of its literals (so comparisons can hold).
func FuzzCompileSQL92(f *testing.F) {
	for _, s := range []string{
		"a > 5 AND b = 'x'", "a BETWEEN 1 AND 10", "b NOT IN ('x', 'y')",
		"x IS NOT NULL OR NOT (c < -1.5e3)", "TRUE", "'it''s' = b", "(((a)))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := CompileSQL92(src)
		if _, nerr := New(TypeSQL92, src); (nerr == nil) != (err == nil) {
			t.Fatalf("%q: CompileSQL92 error %v, New error %v", src, err, nerr)
		}
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
		for _, p := range append(fuzzProps, literalProps(src)...) {
			v, err := e.Evaluate(p)
			if err != nil && !errors.Is(err, ErrEvaluation) {
				t.Fatalf("%q: evaluation error %v does not wrap ErrEvaluation", src, err)
			}
			if v2, err2 := e.Evaluate(p); v2 != v || (err2 == nil) != (err == nil) {
				t.Fatalf("%q on %v: %v, %v then %v, %v", src, p, v, err, v2, err2)
			}
			if e.Match(p) != (err == nil && v == True) {
				t.Fatalf("%q: Match disagrees with Evaluate = %v, %v", src, v, err)
			}
		}
	})
}

// literalProps returns, for each literal of src (at most a few), the
// properties that give every identifier of src that literal's text.
func literalProps(src string) []map[string]string {
	toks, err := lex(src)
	if err != nil {
		return nil
	}
	var idents, values []string
	for _, tk := range toks {
		switch tk.kind {
		case tokIdent:
			idents = append(idents, tk.text)
		case tokString:
			values = append(values, tk.str)
		case tokDecimal, tokFloat, tokTrue, tokFalse:
			values = append(values, tk.text)
		}
	}
	var out []map[string]string
	for _, v := range values[:min(len(values), 4)] {
		p := map[string]string{}
		for _, id := range idents {
			p[id] = v
		}
		out = append(out, p)
	}
	return out
}
