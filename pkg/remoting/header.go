package remoting

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// A custom header is a struct whose fields map to extFields by their `rmq` tag:
//
//	type pullHeader struct {
//		ConsumerGroup string `rmq:"consumerGroup,required"`
//		QueueID       int32  `rmq:"queueId,required"`
//		SubVersion    *int64 `rmq:"subVersion"`
//	}
//
// Supported kinds: string, bool, signed integers, and pointers to them (nil = absent).

// DecodeHeader fills the struct pointed to by dst from c's extFields. A missing required
// field or an unparsable value is an error that names the field, fit for a remark.
func DecodeHeader(c *Command, dst any) error {
	v, err := headerStruct(dst)
	if err != nil {
		return err
	}
	layout, err := headerLayoutOf(v.Type())
	if err != nil {
		return err
	}
	return layout.decode(c, v)
}

// RenamedHeader decodes one struct type of header whose fields may travel under other
// names (SEND_MESSAGE_V2's single letters): a field is looked up under its other name
// first, then under its own. The names are resolved once, when it is made: per request
// they cost a send as much as the rest of its header decoding.
type RenamedHeader struct {
	t      reflect.Type
	layout *headerLayout
}

// NewRenamedHeader makes the decoder of proto's type (a struct or a pointer to one);
// rename maps a field's tag name to the name it is sent under. A type that cannot be a
// header is a programming error, and panics.
func NewRenamedHeader(proto any, rename map[string]string) *RenamedHeader {
	t := reflect.TypeOf(proto)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	layout, err := headerLayoutOf(t)
	if err != nil {
		panic(err)
	}
	fields := slices.Clone(layout.fields)
	for i := range fields {
		fields[i].alias = rename[fields[i].name]
	}
	return &RenamedHeader{t: t, layout: newHeaderLayout(fields)}
}

// Decode fills the struct pointed to by dst, of the decoder's type, as DecodeHeader does.
func (h *RenamedHeader) Decode(c *Command, dst any) error {
	v, err := headerStruct(dst)
	if err != nil {
		return err
	}
	if v.Type() != h.t {
		return fmt.Errorf("remoting: a decoder of %s cannot decode into %s", h.t, v.Type())
	}
	return h.layout.decode(c, v)
}

// headerStruct returns the struct dst points to.
func headerStruct(dst any) (reflect.Value, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("remoting: DecodeHeader needs a non-nil pointer to a struct, not %T", dst)
	}
	return v.Elem(), nil
}

// headerLayout is how a header struct's fields map to extFields.
type headerLayout struct {
	fields []headerField
	// slot maps each name a field is sent under to 2*its index in fields, +1 for an alias.
	slot map[string]int
	// letterSlot is slot+1 for the one-letter names (SEND_MESSAGE_V2's), 0 for none:
	// looked up without hashing, for every field of every send.
	letterSlot [utf8.RuneSelf]int
}

func newHeaderLayout(fields []headerField) *headerLayout {
	l := &headerLayout{fields: fields, slot: make(map[string]int, 2*len(fields))}
	for i, f := range fields {
		l.slot[f.name] = 2 * i
		if f.alias != "" {
			l.slot[f.alias] = 2*i + 1
		}
	}
	for name, s := range l.slot {
		if len(name) == 1 && name[0] < utf8.RuneSelf {
			l.letterSlot[name[0]] = s + 1
		}
	}
	return l
}

// slotOf returns slot[name].
func (l *headerLayout) slotOf(name string) (int, bool) {
	if len(name) == 1 && name[0] < utf8.RuneSelf {
		s := l.letterSlot[name[0]]
		return s - 1, s > 0
	}
	s, ok := l.slot[name]
	return s, ok
}

// headerField is a struct field that carries an extField.
type headerField struct {
	index    int
	name     string
	alias    string // the name it is looked up under first; "": none (RenamedHeader)
	required bool
}

// rawField is the text a field arrived with; rank 0: absent, 1: under its name, 2:
// under its alias, which counts over the name.
type rawField struct {
	text string
	rank uint8
}

// decode fills v from c's extFields.
func (l *headerLayout) decode(c *Command, v reflect.Value) error {
	var buf [24]rawField
	raw := buf[:0]
	if len(l.fields) > len(buf) {
		raw = make([]rawField, 0, len(l.fields))
	}
	raw = l.gather(c, raw[:len(l.fields)])
	for i, f := range l.fields {
		if raw[i].rank == 0 {
			if f.required {
				return fmt.Errorf("the custom field <%s> is null", f.name)
			}
			continue
		}
		if err := setField(v.Field(f.index), raw[i].text); err != nil {
			return fmt.Errorf("the custom field <%s> is invalid: %v", f.name, err)
		}
	}
	return nil
}

// gather fills raw, one entry per field, from c's extFields.
func (l *headerLayout) gather(c *Command, raw []rawField) []rawField {
	if c.fieldList == nil {
		for i, f := range l.fields {
			if f.alias != "" {
				if text, ok := c.ExtFields[f.alias]; ok {
					raw[i] = rawField{text, 2}
					continue
				}
			}
			if text, ok := c.ExtFields[f.name]; ok {
				raw[i] = rawField{text, 1}
			}
		}
		return raw
	}
	// One pass over the fields as they came: of a name sent twice the last counts, as
	// in a map.
	for _, u := range c.fieldList {
		s, ok := l.slotOf(u.name)
		if !ok {
			continue
		}
		i, rank := s/2, uint8(1+s%2)
		if rank >= raw[i].rank {
			raw[i] = rawField{u.value, rank}
		}
	}
	return raw
}

// headerLayouts caches headerLayoutOf per struct type: a header is decoded on every
// request, and reading its tags each time cost a send about a tenth of its decoding.
var headerLayouts sync.Map // reflect.Type -> *headerLayout, or error

func headerLayoutOf(t reflect.Type) (*headerLayout, error) {
	if cached, ok := headerLayouts.Load(t); ok {
		if err, bad := cached.(error); bad {
			return nil, err
		}
		return cached.(*headerLayout), nil
	}
	var fields []headerField
	for i := range t.NumField() {
		name, required := parseTag(t.Field(i).Tag.Get("rmq"))
		if name == "" {
			continue
		}
		if !t.Field(i).IsExported() {
			err := fmt.Errorf("remoting: header field %s (%s) is not exported", t.Field(i).Name, name)
			headerLayouts.Store(t, err)
			return nil, err
		}
		fields = append(fields, headerField{index: i, name: name, required: required})
	}
	l := newHeaderLayout(fields)
	headerLayouts.Store(t, l)
	return l, nil
}

// EncodeHeader returns src's fields as extFields; nil pointers are left out. src is a
// struct or a pointer to one. A field of an unsupported kind is a programming error: it
// panics with a message naming the field rather than silently dropping it.
func EncodeHeader(src any) map[string]string {
	v := reflect.Indirect(reflect.ValueOf(src))
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("remoting: EncodeHeader needs a struct or a pointer to one, not %T", src))
	}
	t := v.Type()
	out := make(map[string]string, t.NumField())
	for i := range t.NumField() {
		name, _ := parseTag(t.Field(i).Tag.Get("rmq"))
		if name == "" {
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.String:
			out[name] = f.String()
		case reflect.Bool:
			out[name] = strconv.FormatBool(f.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			out[name] = strconv.FormatInt(f.Int(), 10)
		default:
			panic(fmt.Sprintf("remoting: EncodeHeader: field %s (%s) has unsupported kind %s", t.Field(i).Name, name, f.Kind()))
		}
	}
	return out
}

func parseTag(tag string) (name string, required bool) {
	name, opts, _ := strings.Cut(tag, ",")
	return name, opts == "required"
}

// parseInt is strconv.ParseInt(strings.TrimSpace(raw), 10, bits) (Java's parseInt and
// parseLong, whose header fields' white space RemotingCommand trims), first trying the
// few plain digits clients send: ParseInt's generality was a tenth of decoding a send's
// header.
func parseInt[T string | []byte](raw T, bits int) (int64, error) {
	if n, ok := plainInt(raw); ok && (bits == 64 || -1<<(bits-1) <= n && n < 1<<(bits-1)) {
		return n, nil
	}
	return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, bits)
}

// plainInt reads an optional minus and 1 to 18 decimal digits, all of s, which cannot
// overflow an int64.
func plainInt[T string | []byte](s T) (int64, bool) {
	digits := s
	if len(s) > 0 && s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for i := range len(digits) {
		d := digits[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if len(digits) < len(s) {
		n = -n
	}
	return n, true
}

func setField(f reflect.Value, raw string) error {
	if f.Kind() == reflect.Pointer {
		p := reflect.New(f.Type().Elem())
		if err := setField(p.Elem(), raw); err != nil {
			return err
		}
		f.Set(p)
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		// Java's Boolean.parseBoolean: anything but "true" (any case) is false.
		f.SetBool(strings.EqualFold(strings.TrimSpace(raw), "true"))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := parseInt(raw, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported field kind %s", f.Kind())
	}
	return nil
}
