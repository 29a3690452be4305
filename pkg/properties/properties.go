// Package properties reads java.util.Properties text: the format of RocketMQ's
// broker.conf and namesrv.conf, and of the bodies of UPDATE_BROKER_CONFIG and
// GET_BROKER_CONFIG.
package properties

import (
	"maps"
	"slices"

	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Property is one key=value pair of a properties file, with the line it started on.
type Property struct {
	Key, Value string
	Line       int
}

// Parse reads Java properties text: '#' or '!' comment lines, key and value
// separated by '=', ':' or blanks, a trailing backslash continues the line, and the
// escapes \t \n \r \f \uXXXX and \<char>. Later keys win, as in java.util.Properties.
func Parse(r io.Reader) ([]Property, error) {
	var out []Property
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && sc.Scan() {
			lineNo++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		out = append(out, Property{Key: key, Value: value, Line: start})
	}
	return out, sc.Err()
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProperty(line string) (key, value string, err error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey := line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	if key, err = unescape(rawKey); err != nil {
		return "", "", err
	}
	if value, err = unescape(rest); err != nil {
		return "", "", err
	}
	// Values commonly carry trailing blanks by accident; Java keeps them, which only
	// ever produces confusing parse errors. Trim them.
	return key, strings.TrimRight(value, " \t\f"), nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("short \\u escape in %q", s)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("bad \\u escape in %q", s)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// Format renders props as "key=value" lines in key order. Values are written as they
// are: RocketMQ's keys and values need no escapes.
func Format(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(props[k])
		b.WriteByte('\n')
	}
	return b.String()
}
