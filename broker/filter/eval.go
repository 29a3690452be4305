package filter

import "math"

// node is one operator of a compiled SQL92 expression. eval returns the
// node's value; an error means Java would have thrown, which abandons the
// whole evaluation and the message is not delivered.
type node interface {
	eval(props map[string]string) (value, error)
}

// literalNode is a constant: number, string, TRUE, FALSE or NULL.
type literalNode struct{ v value }

// propertyNode reads a user property; a missing one is null.
type propertyNode struct{ name string }

// negateNode is unary minus: numbers are negated with Java overflow
// (-Integer.MIN_VALUE stays negative), anything else is null.
type negateNode struct{ x node }

// notNode is NOT: null stays null.
type notNode struct{ x node }

// boolCastNode turns a bare property used as a condition into a boolean:
// null stays null, a non-Boolean (every property value) is false.
type boolCastNode struct{ x node }

// andNode and orNode are n-ary AND and OR, evaluated left to right; they stop
// at the first FALSE (AND) or TRUE (OR). Flattening is exact: Kleene AND and
// OR are associative and the left-to-right stopping point is unchanged.
type andNode struct{ xs []node }
type orNode struct{ xs []node }

// equalNode is =, and IS NULL when r is the NULL literal.
type equalNode struct{ l, r node }

// compareNode is >, >=, < or <=.
type compareNode struct {
	op   tokenKind
	l, r node
}

// inNode is IN or NOT IN over string literals.
type inNode struct {
	prop   *propertyNode
	list   []string
	set    map[string]struct{} // list as a set once it is long
	negate bool
}

func (n *literalNode) eval(map[string]string) (value, error) { return n.v, nil }

func (n *propertyNode) eval(props map[string]string) (value, error) {
	s, ok := props[n.name]
	if !ok {
		return nullValue, nil
	}
	return value{kind: kindString, s: s}, nil
}

func (n *negateNode) eval(props map[string]string) (value, error) {
	v, err := n.x.eval(props)
	if err != nil {
		return nullValue, err
	}
	switch v.kind {
	case kindInt:
		return value{kind: kindInt, n: int64(-int32(v.n))}, nil
	case kindLong:
		if v.n == math.MinInt64 {
			return v, nil
		}
		return value{kind: kindLong, n: -v.n}, nil
	case kindDouble:
		return doubleValue(-v.float()), nil
	}
	return nullValue, nil
}

func (n *notNode) eval(props map[string]string) (value, error) {
	v, err := n.x.eval(props)
	if err != nil || v.isNull() {
		return nullValue, err
	}
	return boolValue(!v.isTrue()), nil
}

func (n *boolCastNode) eval(props map[string]string) (value, error) {
	v, err := n.x.eval(props)
	if err != nil || v.isNull() {
		return nullValue, err
	}
	return boolValue(v.isTrue()), nil
}

func (n *andNode) eval(props map[string]string) (value, error) {
	unknown := false
	for _, x := range n.xs {
		v, err := x.eval(props)
		if err != nil {
			return nullValue, err
		}
		if v.isFalse() {
			return falseValue, nil
		}
		unknown = unknown || v.isNull()
	}
	if unknown {
		return nullValue, nil
	}
	return trueValue, nil
}

func (n *orNode) eval(props map[string]string) (value, error) {
	unknown := false
	for _, x := range n.xs {
		v, err := x.eval(props)
		if err != nil {
			return nullValue, err
		}
		if v.isTrue() {
			return trueValue, nil
		}
		unknown = unknown || v.isNull()
	}
	if unknown {
		return nullValue, nil
	}
	return falseValue, nil
}

// eval follows Java's equality: both sides are evaluated; null = null is
// TRUE, null = x is null, x = null is FALSE; otherwise equal values, or values
// that compare as 0 after conversion, are TRUE.
func (n *equalNode) eval(props map[string]string) (value, error) {
	l, err := n.l.eval(props)
	if err != nil {
		return nullValue, err
	}
	r, err := n.r.eval(props)
	if err != nil {
		return nullValue, err
	}
	switch {
	case l.isNull() && r.isNull():
		return trueValue, nil
	case l.isNull():
		return nullValue, nil
	case r.isNull():
		return falseValue, nil
	}
	c, err := compareValues(l, r)
	if err != nil {
		return nullValue, err
	}
	return boolValue(c == 0), nil
}

// eval follows Java's ordering comparison: a null left side is null without
// looking at the right; two strings (two properties) compare as doubles.
func (n *compareNode) eval(props map[string]string) (value, error) {
	l, err := n.l.eval(props)
	if err != nil || l.isNull() {
		return nullValue, err
	}
	r, err := n.r.eval(props)
	if err != nil || r.isNull() {
		return nullValue, err
	}
	if l.kind == kindString && r.kind == kindString {
		if l, err = convertString(l.s, kindDouble); err != nil {
			return nullValue, err
		}
		if r, err = convertString(r.s, kindDouble); err != nil {
			return nullValue, err
		}
	}
	c, err := compareValues(l, r)
	if err != nil {
		return nullValue, err
	}
	switch n.op {
	case tokGT:
		return boolValue(c > 0), nil
	case tokGE:
		return boolValue(c >= 0), nil
	case tokLT:
		return boolValue(c < 0), nil
	}
	return boolValue(c <= 0), nil
}

func (n *inNode) eval(props map[string]string) (value, error) {
	s, ok := props[n.prop.name]
	if !ok {
		return nullValue, nil
	}
	found := false
	if n.set != nil {
		_, found = n.set[s]
	} else {
		for _, e := range n.list {
			if e == s {
				found = true
				break
			}
		}
	}
	return boolValue(found != n.negate), nil
}
