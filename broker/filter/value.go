package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// kind is the Java class a value would have in the Java filter: properties
// are always String, literals are Integer, Long, Double, String or Boolean.
type kind uint8

const (
	kindNull   kind = iota // Java null: missing property or unknown result
	kindBool               // java.lang.Boolean
	kindInt                // java.lang.Integer
	kindLong               // java.lang.Long
	kindDouble             // java.lang.Double
	kindString             // java.lang.String
)

// value is one evaluated operand. n holds Boolean (0 or 1), Integer and Long
// values and the bits of Double values; s holds String values.
type value struct {
	kind kind
	n    int64
	s    string
}

func doubleValue(f float64) value {
	return value{kind: kindDouble, n: int64(math.Float64bits(f))}
}

// float returns the value of a Double.
func (v value) float() float64 { return math.Float64frombits(uint64(v.n)) }

var (
	nullValue  = value{}
	trueValue  = value{kind: kindBool, n: 1}
	falseValue = value{kind: kindBool}
)

func boolValue(b bool) value {
	if b {
		return trueValue
	}
	return falseValue
}

func (v value) isNull() bool    { return v.kind == kindNull }
func (v value) isTrue() bool    { return v.kind == kindBool && v.n == 1 }
func (v value) isFalse() bool   { return v.kind == kindBool && v.n == 0 }
func (v value) isNumber() bool  { return v.kind >= kindInt && v.kind <= kindDouble }
func (v value) isBoolean() bool { return v.kind == kindBool || v.kind == kindNull }

// String renders v as it would be written in an expression.
func (v value) String() string {
	switch v.kind {
	case kindBool:
		if v.n == 1 {
			return "TRUE"
		}
		return "FALSE"
	case kindInt, kindLong:
		return strconv.FormatInt(v.n, 10)
	case kindDouble:
		return strconv.FormatFloat(v.float(), 'g', -1, 64)
	case kindString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	}
	return "NULL"
}

// errConversion reports a property value that Java could not convert for a
// comparison; Java throws there and the whole evaluation is abandoned.
func errConversion(s, to string) error {
	return fmt.Errorf("%w: cannot convert %q to %s", ErrEvaluation, s, to)
}

// compareValues is ComparisonExpression.__compare with string conversion on,
// as RocketMQ always parses: values of different classes are converted
// towards the class of the other side (String to a number or Boolean, Integer
// to Long, integers to Double). A Boolean against a number compares as -1.
// Neither value may be null.
func compareValues(l, r value) (int, error) {
	if l.kind == r.kind {
		return compareSameKind(l, r), nil
	}
	switch l.kind {
	case kindBool:
		if r.kind == kindString {
			// Java casts the Boolean to String here: ClassCastException.
			return 0, fmt.Errorf("%w: cannot compare a boolean with string %q", ErrEvaluation, r.s)
		}
		return -1, nil
	case kindInt, kindLong:
		switch r.kind {
		case kindInt, kindLong:
			return compareInt(l.n, r.n), nil
		case kindDouble:
			return compareDouble(float64(l.n), r.float()), nil
		case kindString:
			rv, err := convertString(r.s, l.kind)
			if err != nil {
				return 0, err
			}
			return compareSameKind(l, rv), nil
		}
		return -1, nil
	case kindDouble:
		switch r.kind {
		case kindInt, kindLong:
			return compareDouble(l.float(), float64(r.n)), nil
		case kindString:
			rv, err := convertString(r.s, kindDouble)
			if err != nil {
				return 0, err
			}
			return compareDouble(l.float(), rv.float()), nil
		}
		return -1, nil
	case kindString:
		lv, err := convertString(l.s, r.kind)
		if err != nil {
			return 0, err
		}
		return compareSameKind(lv, r), nil
	}
	return -1, nil
}

// compareSameKind is compareTo between two values of one class.
func compareSameKind(l, r value) int {
	switch l.kind {
	case kindDouble:
		return compareDouble(l.float(), r.float())
	case kindString:
		return strings.Compare(l.s, r.s)
	}
	return compareInt(l.n, r.n)
}

// convertString is Boolean.valueOf, Integer.valueOf, Long.valueOf or
// Double.valueOf of s, chosen by the class of the other operand.
func convertString(s string, to kind) (value, error) {
	switch to {
	case kindBool:
		return boolValue(javaBoolean(s)), nil
	case kindInt:
		n, ok := javaParseInteger(s, math.MinInt32, math.MaxInt32)
		if !ok {
			return nullValue, errConversion(s, "int")
		}
		return value{kind: kindInt, n: n}, nil
	case kindLong:
		n, ok := javaParseInteger(s, math.MinInt64, math.MaxInt64)
		if !ok {
			return nullValue, errConversion(s, "long")
		}
		return value{kind: kindLong, n: n}, nil
	case kindDouble:
		f, ok := javaParseDouble(s)
		if !ok {
			return nullValue, errConversion(s, "double")
		}
		return doubleValue(f), nil
	}
	return value{kind: kindString, s: s}, nil
}
