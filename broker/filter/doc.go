// Package filter decides which messages a subscription receives: RocketMQ
// 4.x TAG expressions and SQL92 property filters, evaluated the way the Java
// broker (FilterAPI, rocketmq-filter 4.9.x) evaluates them.
//
// [New] builds the [Filter] of one subscription. The pull path calls
// MatchTagsCode with the consume-queue entry's tags code and, if it passes,
// MatchProperties with the message's decoded properties.
//
// # TAG expressions
//
// "" and "*" match every message. Otherwise the expression is split on "||",
// each part is trimmed of characters <= ' ' (String.trim) and empty parts are
// dropped: "TagA || TagB" subscribes to TagA and TagB. The broker compares the
// low 32 bits of the consume-queue tags code with the tags' Java
// String.hashCode values ([TagsCode]); a message without tags has code 0.
// Hash collisions pass the broker; the client re-checks the tag string
// ([TagFilter.MatchTag]). " * " is the tag "*", not a wildcard, as in Java.
//
// # SQL92 grammar
//
// Keywords are case-insensitive; lower rules bind tighter:
//
//	selector   = or EOF
//	or         = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { ("=" | "<>") comparison | IS [NOT] NULL }
//	comparison = unary { (">" | ">=" | "<" | "<=") unary
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")" }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = literal | identifier | "(" or ")"
//	literal    = string | decimal | float | TRUE | FALSE | NULL
//
//	identifier = [A-Za-z_$] { [A-Za-z0-9_$] }    property name, case-sensitive
//	string     = "'" { "''" | any char but "'" } "'"
//	decimal    = "0" | [1-9] { [0-9] } [lL]       Integer, or Long if larger
//	float      = digits "." [digits] [exp] | "." digits [exp] | digits exp
//	exp        = [eE] [+-] digits
//
// Whitespace is " \t\n\r\f"; "--" to a line break and "/* */" are comments.
// There is no LIKE, no hexadecimal or octal literal, and no "!=".
//
// NOT is a prefix operator that binds tighter than comparisons, exactly as in
// the Java grammar: "NOT a = 'x'" means "(NOT a) = 'x'" and never matches;
// write "NOT (a = 'x')" or "a <> 'x'". Equality binds looser than ordering, so
// "a > 1 = TRUE" is "(a > 1) = TRUE".
//
// # SQL92 semantics
//
// Property values are strings; a missing property is null. The message is
// delivered only when the expression is TRUE. Rules, all taken from the Java
// classes:
//
//   - AND, OR and NOT use three-valued logic: NOT null is null, null AND FALSE
//     is FALSE, null OR TRUE is TRUE. Operands are evaluated left to right and
//     AND (OR) stops at the first FALSE (TRUE).
//   - A comparison with a null operand is null, with these Java exceptions for
//     = and <>: null = null is TRUE, x = null is FALSE when the literal or
//     non-null value is on the left ('x' = a with a missing is FALSE, so
//     'x' <> a is TRUE), and IS NULL / IS NOT NULL are never null.
//   - Values of different types are converted towards the other side: a
//     property compared with an integer literal is parsed with
//     Integer.parseInt (Long.parseLong if the literal needs 64 bits), with a
//     float literal with Double.valueOf, and with TRUE or FALSE with
//     Boolean.valueOf ("true" in any case is TRUE, anything else FALSE).
//   - Two properties compared with >, >=, <, <= are both parsed as doubles;
//     with = and <> they are compared as strings. Doubles order as
//     Double.compareTo does: -0.0 before 0.0, NaN after +Infinity.
//   - A value that cannot be converted ("a > 5" with a = "abc" or "5.5") makes
//     Java throw, which abandons the whole evaluation: the message is not
//     delivered, even under NOT or OR. [Expression.Evaluate] reports it as an
//     error wrapping [ErrEvaluation].
//   - A bare property used as a condition is null if missing and FALSE
//     otherwise (property values are never booleans). Unary minus of a
//     property is null.
//   - IN and NOT IN take string literals and need a property on the left; a
//     missing property gives null.
//   - a BETWEEN x AND y is a >= x AND a <= y; NOT BETWEEN is a < x OR a > y.
//     Literal bounds in the wrong order are rejected.
//   - Compile-time checks as in Java: NULL may not be an operand of = or <>;
//     >, >=, <, <= and BETWEEN reject string, boolean and NULL literals and
//     conditions; TRUE or FALSE may not be compared with a non-boolean
//     literal on its right; AND, OR, NOT and the whole expression need a
//     condition or a property.
//
// # Differences from Java 4.9.x
//
//   - Tokens after a complete expression are an error; Java ignores them
//     ("a = 1 b" is accepted there).
//   - A float literal equal to zero (0.0, 1e-400) is accepted; Java rejects
//     it by mistake (it tests value < Double.MIN_VALUE).
//   - Parentheses and prefix operators nest at most 100 deep.
//   - Errors name a 1-based character position and the problem.
//   - Java 4.9's optional consume-queue bloom filter for SQL92 is not built:
//     MatchTagsCode is always true for SQL92 and the expression decides.
//   - CONTAINS, STARTSWITH and ENDSWITH came with RocketMQ 5 and are not
//     supported.
package filter
