package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string // the whole message
	}{
		{"", "unexpected end of expression at position 1"},
		{"a AND", "unexpected end of expression at position 6"},
		{"a > 5 AND AND b", "unexpected token 'AND' at position 11"},
		{"a = 'x", "unterminated string literal at position 5"},
		{"a = 'it''s", "unterminated string literal at position 5"},
		{"a ! 5", "unexpected character '!' at position 3"},
		{"a != 5", "unexpected character '!' at position 3"},
		{"a == 5", "unexpected token '=' at position 4"},
		{"a = 5 b", "unexpected token 'b' at position 7"},
		{"a = 5)", "unexpected token ')' at position 6"},
		{"a = 5 'x'", "unexpected string 'x' at position 7"},
		{"(a = 5", "expected ')' but found end of expression at position 7"},
		{"()", "unexpected token ')' at position 2"},
		{"a LIKE 'x%'", "unexpected token 'LIKE' at position 3"},
		{"a CONTAINS 'x'", "unexpected token 'CONTAINS' at position 3"},
		{"a IN ()", "expected a string literal in the IN list but found token ')' at position 7"},
		{"a IN ('x', 5)", "expected a string literal in the IN list but found token '5' at position 12"},
		{"a IN ('x' 'y')", "expected ',' or ')' in the IN list but found string 'y' at position 11"},
		{"a IN 'x'", "expected '(' after IN but found string 'x' at position 6"},
		{"5 IN ('x')", "IN needs a property name on its left at position 3"},
		{"a BETWEEN 1", "expected AND after BETWEEN but found end of expression at position 12"},
		{"a BETWEEN 5 AND 1", "BETWEEN bounds 5 and 1 are in the wrong order at position 3"},
		{"a BETWEEN 'a' AND 'b'", "'a' cannot be compared with BETWEEN at position 3"},
		{"a BETWEEN NULL AND 1", "NULL cannot be compared with BETWEEN at position 3"},
		{"a > 'x'", "'x' cannot be compared with > at position 3"},
		{"a >= TRUE", "TRUE cannot be compared with >= at position 3"},
		{"a < NULL", "NULL cannot be compared with < at position 3"},
		{"a = NULL", "NULL cannot be compared with =; use IS NULL at position 3"},
		{"NULL <> a", "NULL cannot be compared with <>; use IS NULL at position 6"},
		{"TRUE = 5", "TRUE cannot be compared with 5 at position 6"},
		{"FALSE = 'x'", "FALSE cannot be compared with 'x' at position 7"},
		{"a > 5 > 3", "a condition cannot be compared with > at position 7"},
		{"NOT a > 5", "a condition cannot be compared with > at position 7"},
		{"5", "the expression is not a boolean expression at position 1"},
		{"'x'", "the expression is not a boolean expression at position 1"},
		{"-a", "the expression is not a boolean expression at position 1"},
		{"a AND 5", "the right operand of AND is not a boolean expression at position 7"},
		{"5 OR a", "the left operand of OR is not a boolean expression at position 1"},
		{"NOT 5", "the operand of NOT is not a boolean expression at position 5"},
		{"a IS 5", "expected NULL but found token '5' at position 6"},
		{"a IS NOT 5", "expected NULL but found token '5' at position 10"},
		{"a NOT LIKE 'x'", "expected BETWEEN or IN after NOT but found token 'LIKE' at position 7"},
		{"a NOT", "expected BETWEEN or IN after NOT but found end of expression at position 6"},
		{"a = 9223372036854775808", "number 9223372036854775808 is out of range at position 5"},
		{"a = 1e400", "number 1e400 is out of range at position 5"},
		{"a = 0L", "unexpected token 'L' at position 6"},
		{"a = 012", "unexpected token '12' at position 6"},
		{"a = 0x1F", "unexpected token 'x1F' at position 6"},
		{"a.b = 1", "unexpected character '.' at position 2"},
		{"a = \"x\"", "unexpected character '\"' at position 5"},
		{"a = 1 /* x", "unterminated comment at position 7"},
		{"a = 1 -- no line break", "unexpected token '-' at position 7"},
		{"é = 1", "unexpected character 'é' at position 1"},
		{"a = 'é' AND ü", "unexpected character 'ü' at position 13"}, // characters, not bytes
		{"a = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' 1", "unexpected token '1' at position 41"},
		{"a = 1 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", "unexpected string 'aaaaaaaaaaaaaaaaaaaa... at position 7"},
	}
	for _, tt := range tests {
		e, err := CompileSQL92(tt.expr)
		if err == nil {
			t.Errorf("CompileSQL92(%q) = %v, want error %q", tt.expr, e, tt.want)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("CompileSQL92(%q) error %T is not a *SyntaxError wrapping ErrSyntax", tt.expr, err)
		}
		if want := "SQL92 expression: " + tt.want; err.Error() != want {
			t.Errorf("CompileSQL92(%q) error\n got %s\nwant %s", tt.expr, err, want)
		}
	}
}

func TestCompileAcceptsJavaForms(t *testing.T) {
	for _, expr := range []string{
		"a = 9223372036854775807",
		"a = 9223372036854775807L",
		"a > -2147483648",
		"a = 4.9e-324",
		"a BETWEEN 1 AND 1",
		"a BETWEEN 1 AND 1.5",
		"a BETWEEN -5 AND -10", // Java only checks plain literals
		"a NOT BETWEEN 5 AND 1",
		"a = 'x' = TRUE",
		"5 = TRUE",
		"'x' = TRUE",
		"TRUE = FALSE",
		"-'x' > 5",
		"+a IN ('x')",
		"NULL",
		"NOT NULL AND TRUE",
		"a = b = c",
		"a = 1 --\n",
		"/**/a/***/=/* ** */1",
	} {
		if _, err := CompileSQL92(expr); err != nil {
			t.Errorf("CompileSQL92(%q): %v", expr, err)
		}
	}
}

func TestNestingLimit(t *testing.T) {
	nest := func(open, body, close string, n int) string {
		return strings.Repeat(open, n) + body + strings.Repeat(close, n)
	}
	ok := []string{
		nest("(", "a = 1", ")", maxDepth),
		nest("NOT ", "a", "", maxDepth),
		nest("-", "1 = a", "", maxDepth),
	}
	for _, expr := range ok {
		if _, err := CompileSQL92(expr); err != nil {
			t.Errorf("%d levels: %v", maxDepth, err)
		}
	}
	deep := []string{
		nest("(", "a = 1", ")", maxDepth+1),
		nest("(", "a = 1", ")", 10000),
		nest("(", "", "", 10000),
		nest("NOT ", "a", "", 10000),
		nest("- ", "1 = a", "", 10000),
		nest("+", "1 = a", "", 10000),
		nest("(NOT ", "a", ")", 10000),
		"a = " + nest("(", "1", ")", 10000),
	}
	for _, expr := range deep {
		_, err := CompileSQL92(expr)
		if err == nil || !strings.Contains(err.Error(), "nested more than 100 levels deep") {
			t.Errorf("%.20q...: error %v, want nesting error", expr, err)
		}
	}
}

func TestLongFlatExpression(t *testing.T) {
	terms := make([]string, 10000)
	for i := range terms {
		terms[i] = "x = 'v'"
	}
	e, err := CompileSQL92(strings.Join(terms, " OR ") + " OR a = 10")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Match(props) {
		t.Error("10,001-term OR did not match on its last term")
	}
}
