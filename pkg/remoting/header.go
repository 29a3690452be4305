package remoting

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	fields, err := headerFieldsOf(v.Type())
	if err != nil {
		return err
	}
	return decodeFields(c, v, fields)
}

// RenamedHeader decodes one struct type of header whose fields may travel under other
// names (SEND_MESSAGE_V2's single letters): a field is looked up under its other name
// first, then under its own. The names are resolved once, when it is made: per request
// they cost a send as much as the rest of its header decoding.
type RenamedHeader struct {
	t      reflect.Type
	fields []headerField
}

// NewRenamedHeader makes the decoder of proto's type (a struct or a pointer to one);
// rename maps a field's tag name to the name it is sent under. A type that cannot be a
// header is a programming error, and panics.
func NewRenamedHeader(proto any, rename map[string]string) *RenamedHeader {
	t := reflect.TypeOf(proto)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fields, err := headerFieldsOf(t)
	if err != nil {
		panic(err)
	}
	fields = slices.Clone(fields)
	for i := range fields {
		fields[i].alias = rename[fields[i].name]
	}
	return &RenamedHeader{t: t, fields: fields}
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
	return decodeFields(c, v, h.fields)
}

// headerStruct returns the struct dst points to.
func headerStruct(dst any) (reflect.Value, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("remoting: DecodeHeader needs a non-nil pointer to a struct, not %T", dst)
	}
	return v.Elem(), nil
}

func decodeFields(c *Command, v reflect.Value, fields []headerField) error {
	for _, f := range fields {
		var raw string
		ok := false
		if f.alias != "" {
			raw, ok = c.LookupField(f.alias)
		}
		if !ok {
			raw, ok = c.LookupField(f.name)
		}
		if !ok {
			if f.required {
				return fmt.Errorf("the custom field <%s> is null", f.name)
			}
			continue
		}
		if err := setField(v.Field(f.index), raw); err != nil {
			return fmt.Errorf("the custom field <%s> is invalid: %v", f.name, err)
		}
	}
	return nil
}

// headerField is a struct field that carries an extField.
type headerField struct {
	index    int
	name     string
	alias    string // the name it is looked up under first; "": none (RenamedHeader)
	required bool
}

// headerFields caches headerFieldsOf per struct type: a header is decoded on every
// request, and reading its tags each time cost a send about a tenth of its decoding.
var headerFields sync.Map // reflect.Type -> []headerField, or error

func headerFieldsOf(t reflect.Type) ([]headerField, error) {
	if cached, ok := headerFields.Load(t); ok {
		if err, bad := cached.(error); bad {
			return nil, err
		}
		return cached.([]headerField), nil
	}
	var fields []headerField
	for i := range t.NumField() {
		name, required := parseTag(t.Field(i).Tag.Get("rmq"))
		if name == "" {
			continue
		}
		if !t.Field(i).IsExported() {
			err := fmt.Errorf("remoting: header field %s (%s) is not exported", t.Field(i).Name, name)
			headerFields.Store(t, err)
			return nil, err
		}
		fields = append(fields, headerField{index: i, name: name, required: required})
	}
	headerFields.Store(t, fields)
	return fields, nil
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
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported field kind %s", f.Kind())
	}
	return nil
}
