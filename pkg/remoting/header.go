package remoting

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
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
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("remoting: DecodeHeader needs a non-nil pointer to a struct, not %T", dst)
	}
	v = v.Elem()
	t := v.Type()
	for i := range t.NumField() {
		name, required := parseTag(t.Field(i).Tag.Get("rmq"))
		if name == "" {
			continue
		}
		if !t.Field(i).IsExported() {
			return fmt.Errorf("remoting: header field %s (%s) is not exported", t.Field(i).Name, name)
		}
		raw, ok := c.ExtFields[name]
		if !ok {
			if required {
				return fmt.Errorf("the custom field <%s> is null", name)
			}
			continue
		}
		if err := setField(v.Field(i), raw); err != nil {
			return fmt.Errorf("the custom field <%s> is invalid: %v", name, err)
		}
	}
	return nil
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
