package filter

import (
	"errors"
	"testing"
)

// props is the message every evaluation test runs against; x and y are
// missing.
var props = map[string]string{
	"a":      "10",
	"b":      "x",
	"f":      "2.5",
	"t":      "true",
	"s":      "abc",
	"e":      "",
	"neg":    "-3",
	"big":    "3000000000",
	"nan":    "NaN",
	"inf":    "Infinity",
	"negz":   "-0.0",
	"ws":     " 5 ",
	"hexf":   "0x1p3",
	"fsuf":   "2.5f",
	"plus":   "+7",
	"arabic": "\u0663", // ARABIC-INDIC DIGIT THREE
	"TAGS":   "TagA",
}

// outcome renders an evaluation as TRUE, FALSE, UNKNOWN or ERROR (Java threw).
func outcome(t *testing.T, expr string, p map[string]string) string {
	t.Helper()
	e, err := CompileSQL92(expr)
	if err != nil {
		t.Fatalf("CompileSQL92(%q): %v", expr, err)
	}
	v, err := e.Evaluate(p)
	if err != nil {
		if !errors.Is(err, ErrEvaluation) {
			t.Errorf("%q: error %v does not wrap ErrEvaluation", expr, err)
		}
		if e.Match(p) {
			t.Errorf("%q: Match = true after an evaluation error", expr)
		}
		return "ERROR"
	}
	if e.Match(p) != (v == True) {
		t.Errorf("%q: Match = %v but Evaluate = %v", expr, e.Match(p), v)
	}
	return v.String()
}

type evalCase struct {
	expr string
	want string
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tt := range cases {
		if got := outcome(t, tt.expr, props); got != tt.want {
			t.Errorf("%q = %s, want %s", tt.expr, got, tt.want)
		}
	}
}

func TestNumericComparison(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"a > 5", "TRUE"},
		{"a > 10", "FALSE"},
		{"a >= 10", "TRUE"},
		{"a < 11", "TRUE"},
		{"a <= 9", "FALSE"},
		{"a = 10", "TRUE"},
		{"a <> 10", "FALSE"},
		{"5 < a", "TRUE"},
		{"a > 9.5", "TRUE"},
		{"a = 10.0", "TRUE"},
		{"a = 1e1", "TRUE"},
		{"a = .1E2", "TRUE"},
		{"a = 10.", "TRUE"},
		{"a = 10L", "TRUE"},
		{"a > 0.0", "TRUE"},
		{"neg < 0", "TRUE"},
		{"neg = -3", "TRUE"},
		{"a > -5", "TRUE"},
		{"a > --5", "TRUE"}, // no line break, so not a comment
		{"+a > +5", "TRUE"},
		{"f > 2.0", "TRUE"},
		{"f = 2.5", "TRUE"},
		{"f > 2", "ERROR"},   // Integer.parseInt("2.5") throws
		{"s > 1", "ERROR"},   // not a number
		{"e = 0", "ERROR"},   // "" is not a number either
		{"big > 5", "ERROR"}, // Integer.parseInt overflows
		{"big > 5L", "ERROR"},
		{"big > 2147483648", "TRUE"},  // a Long literal: Long.parseLong
		{"big > -2147483648", "TRUE"}, // negated Long stays Long
		{"a > f", "TRUE"},             // two properties compare as doubles
		{"a > b", "ERROR"},
		{"x > 5", "UNKNOWN"},
		{"a > x", "UNKNOWN"},
		{"x > b", "UNKNOWN"},  // right side not looked at
		{"-a > 5", "UNKNOWN"}, // minus of a string is null
	})
}

// Java parses property values with Integer.parseInt, Long.parseLong and
// Double.valueOf, whose quirks show here.
func TestPropertyConversion(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"nan > 1.0", "TRUE"}, // Double.compareTo puts NaN above everything
		{"nan = 1.0", "FALSE"},
		{"inf > 1.0E300", "TRUE"},
		{"negz < 0.5", "TRUE"},
		{"negz < 0.0", "TRUE"}, // -0.0 sorts before 0.0
		{"negz = 0", "ERROR"},
		{"ws = 5.0", "TRUE"}, // Double.valueOf trims
		{"ws = 5", "ERROR"},  // Integer.parseInt does not
		{"hexf = 8.0", "TRUE"},
		{"fsuf = 2.5", "TRUE"},
		{"plus = 7", "TRUE"},
		{"arabic = 3", "TRUE"},    // Character.digit knows other scripts
		{"arabic = 3.0", "ERROR"}, // Double.valueOf does not
	})
}

func TestStringAndBooleanEquality(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"b = 'x'", "TRUE"},
		{"b <> 'x'", "FALSE"},
		{"b = 'X'", "FALSE"},
		{"'x' = b", "TRUE"},
		{"e = ''", "TRUE"},
		{"a = '10'", "TRUE"},
		{"a = '10.0'", "FALSE"}, // strings compare as strings
		{"a = f", "FALSE"},
		{"a = a", "TRUE"},
		{"TAGS = 'TagA'", "TRUE"},
		{"b = 5", "ERROR"},
		{"s = 'it''s'", "FALSE"},
		{"t = TRUE", "TRUE"},
		{"t = FALSE", "FALSE"},
		{"b = TRUE", "FALSE"},
		{"b = FALSE", "TRUE"},     // Boolean.valueOf("x") is false
		{"TRUE = t", "ERROR"},     // Java casts the Boolean to String
		{"'TRUE' = TRUE", "TRUE"}, // Boolean.valueOf ignores case
		{"TRUE = TRUE", "TRUE"},
		{"TRUE <> FALSE", "TRUE"},
		{"5 = TRUE", "FALSE"},
		{"5 = 5.0", "TRUE"},
		{"2147483648 = 2147483648.0", "TRUE"},
		{"(a > 5) = TRUE", "TRUE"},
		{"a > 5 = TRUE", "TRUE"}, // = binds looser than >
		{"(a > 5) = (b = 'x')", "TRUE"},
		{"(a > 5) = b", "ERROR"},
	})
}

func TestNullHandling(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"x IS NULL", "TRUE"},
		{"a IS NULL", "FALSE"},
		{"a IS NOT NULL", "TRUE"},
		{"x IS NOT NULL", "FALSE"},
		{"(x > 5) IS NULL", "TRUE"},
		{"NULL IS NULL", "TRUE"},
		{"x = 'v'", "UNKNOWN"},
		{"x <> 'v'", "UNKNOWN"},
		{"'v' = x", "FALSE"}, // Java: non-null left, null right is FALSE
		{"'v' <> x", "TRUE"},
		{"a = x", "FALSE"},
		{"x = y", "TRUE"}, // Java: null = null
		{"x <> y", "FALSE"},
		{"TRUE = x", "FALSE"},
	})
}

func TestInAndBetween(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"b IN ('x', 'y')", "TRUE"},
		{"b IN ('y')", "FALSE"},
		{"b NOT IN ('y')", "TRUE"},
		{"b NOT IN ('x')", "FALSE"},
		{"x IN ('y')", "UNKNOWN"},
		{"x NOT IN ('y')", "UNKNOWN"},
		{"b IN ('a', 'b', 'c', 'd', 'x')", "TRUE"}, // long lists use a set
		{"b NOT IN ('a', 'b', 'c', 'd', 'x')", "FALSE"},
		{"b IN ('a', 'b', 'c', 'd', 'e')", "FALSE"},
		{"a IN ('10')", "TRUE"},
		{"s IN ('it''s', 'abc')", "TRUE"},
		{"(a) IN ('10')", "TRUE"},
		{"a BETWEEN 1 AND 10", "TRUE"},
		{"a BETWEEN 11 AND 20", "FALSE"},
		{"a NOT BETWEEN 11 AND 20", "TRUE"},
		{"a NOT BETWEEN 1 AND 10", "FALSE"},
		{"a BETWEEN 1.5 AND 10", "TRUE"},
		{"a BETWEEN 5 AND -1", "FALSE"}, // accepted: -1 is not a literal to Java
		{"a BETWEEN f AND 20", "TRUE"},
		{"x BETWEEN 1 AND 2", "UNKNOWN"},
		{"x NOT BETWEEN 1 AND 2", "UNKNOWN"},
		{"f BETWEEN 2 AND 3", "ERROR"},
		{"a BETWEEN 1 AND 10 AND b = 'x'", "TRUE"},
	})
}

func TestLogic(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"a > 5 AND b = 'x'", "TRUE"},
		{"a > 5 AND b = 'y'", "FALSE"},
		{"a < 5 OR b = 'x'", "TRUE"},
		{"a < 5 OR b = 'y'", "FALSE"},
		{"NOT (a > 5)", "FALSE"},
		{"NOT NOT (a > 5)", "TRUE"},
		{"TRUE", "TRUE"},
		{"FALSE", "FALSE"},
		{"NULL", "UNKNOWN"},
		{"NOT NULL", "UNKNOWN"},
		{"t", "FALSE"}, // a property is never a Boolean
		{"x", "UNKNOWN"},
		{"NOT t", "TRUE"},
		{"NOT x", "UNKNOWN"},
		{"t OR a > 5", "TRUE"},
		// Three-valued logic with the missing property x.
		{"NOT (x > 5)", "UNKNOWN"},
		{"x > 5 AND a > 5", "UNKNOWN"},
		{"x > 5 AND a < 5", "FALSE"},
		{"a < 5 AND x > 5", "FALSE"},
		{"x > 5 OR a > 5", "TRUE"},
		{"x > 5 OR a < 5", "UNKNOWN"},
		{"x > 5 OR y > 5", "UNKNOWN"},
		{"NOT (x > 5 AND a < 5)", "TRUE"},
		{"NOT (x > 5 OR a < 5)", "UNKNOWN"},
		// A Java exception ends evaluation unless a short cut skips it.
		{"b = 'x' OR a > b", "TRUE"},
		{"a > b OR b = 'x'", "ERROR"},
		{"b = 'y' AND a > b", "FALSE"},
		{"NOT (f > 2)", "ERROR"},
		{"NOT a = '10'", "ERROR"}, // (NOT a) = '10': Boolean against String
		{"NOT x = '10'", "UNKNOWN"},
	})
}

func TestPrecedence(t *testing.T) {
	runEvalCases(t, []evalCase{
		// AND binds tighter than OR: TRUE OR (FALSE AND FALSE).
		{"a = '10' OR b = 'y' AND s = 'zzz'", "TRUE"},
		{"(a = '10' OR b = 'y') AND s = 'zzz'", "FALSE"},
		{"s = 'zzz' AND b = 'y' OR a = '10'", "TRUE"},
		{"s = 'zzz' AND (b = 'y' OR a = '10')", "FALSE"},
		// NOT binds tighter than AND and OR.
		{"NOT b = 'y' OR TRUE", "ERROR"}, // (NOT b) = 'y' throws first
		{"TRUE OR NOT b = 'y'", "TRUE"},
		{"NOT (a > 5) OR b = 'x'", "TRUE"},
		{"NOT (a > 5) AND b = 'x'", "FALSE"},
		{"NOT (a > 5 AND b = 'x')", "FALSE"},
		{"NOT (a < 5) AND NOT (b = 'y')", "TRUE"},
	})
}

func TestSyntaxVariants(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"a between 1 and 10 AnD b in ('x') and x is null", "TRUE"},
		{"a Is Not Null", "TRUE"},
		{"a = 1 /* comment */ OR b = 'x'", "TRUE"},
		{"-- comment\na = 10", "TRUE"},
		{"a = 10 -- comment\r", "TRUE"},
		{"\ta\f=\r\n10 ", "TRUE"},
		{"(((a = 10)))", "TRUE"},
		{"$_x1 IS NULL", "TRUE"},
		{"a=10AND b='x'", "TRUE"},
		{"NOTa IS NULL", "TRUE"}, // an identifier, not NOT
		{"A = 10", "UNKNOWN"},    // property names are case-sensitive
		{"b = 'x''y'", "FALSE"},
	})
}
