package message

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
)

// Separators of the properties string: key NameValueSeparator value PropertySeparator.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
	// KeySeparator separates several keys inside the KEYS property.
	KeySeparator = " "
)

// Standard property names.
const (
	PropertyKeys                      = "KEYS"
	PropertyTags                      = "TAGS"
	PropertyWaitStoreMsgOK            = "WAIT"
	PropertyDelayTimeLevel            = "DELAY"
	PropertyRetryTopic                = "RETRY_TOPIC"
	PropertyRealTopic                 = "REAL_TOPIC"
	PropertyRealQueueID               = "REAL_QID"
	PropertyTransactionPrepared       = "TRAN_MSG"
	PropertyProducerGroup             = "PGROUP"
	PropertyMinOffset                 = "MIN_OFFSET"
	PropertyMaxOffset                 = "MAX_OFFSET"
	PropertyOriginMessageID           = "ORIGIN_MESSAGE_ID"
	PropertyTransferFlag              = "TRANSFER_FLAG"
	PropertyCorrectionFlag            = "CORRECTION_FLAG"
	PropertyReconsumeTime             = "RECONSUME_TIME"
	PropertyMsgRegion                 = "MSG_REGION"
	PropertyTraceSwitch               = "TRACE_ON"
	PropertyUniqClientMessageIDKey    = "UNIQ_KEY"
	PropertyMaxReconsumeTimes         = "MAX_RECONSUME_TIMES"
	PropertyConsumeStartTime          = "CONSUME_START_TIME"
	PropertyTranPreparedQueueOffset   = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes     = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunityTimeInSecond = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyShardingKey               = "SHARDING_KEY"
	PropertyTransactionID             = "__transactionId__"
	PropertyInnerNum                  = "INNER_NUM"
	PropertyInnerBase                 = "INNER_BASE"
)

// ErrBadProperties reports a properties string or map that cannot be encoded
// unambiguously.
var ErrBadProperties = errors.New("message: malformed properties")

// EncodeProperties encodes m as key\x01value\x02 pairs, keys sorted so the
// output is deterministic. Keys or values holding a separator byte, and empty
// keys, are refused.
func EncodeProperties(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "\x01\x02") || strings.ContainsAny(v, "\x01\x02") {
			return "", fmt.Errorf("%w: property %q", ErrBadProperties, k)
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(NameValueSeparator)
		b.WriteString(m[k])
		b.WriteByte(PropertySeparator)
	}
	return b.String(), nil
}

// Properties is a properties string decoded for editing: read with Get, change with Set
// and Delete, then Encode once (keys sorted, as EncodeProperties). DecodeProperties
// returns one; as a map it is also what filters match against.
type Properties map[string]string

// Get returns key's value, "" when absent.
func (p Properties) Get(key string) string { return p[key] }

// Set sets key to value.
func (p Properties) Set(key, value string) { p[key] = value }

// Delete removes key.
func (p Properties) Delete(key string) { delete(p, key) }

// Encode is EncodeProperties(p).
func (p Properties) Encode() (string, error) { return EncodeProperties(p) }

// AppendProperty adds key=value to an encoded properties string unless key is in it
// already or value is empty. The pairs there stay as they are, bytes and order: the
// broker stamps what a producer sent (CLUSTER) without decoding it.
func AppendProperty(props, key, value string) string {
	if _, ok := LookupProperty(props, key); ok || value == "" {
		return props
	}
	sep := "" // one concatenation, one allocation
	if props != "" && props[len(props)-1] != PropertySeparator {
		sep = string(rune(PropertySeparator))
	}
	return props + sep + key + string(rune(NameValueSeparator)) + value + string(rune(PropertySeparator))
}

// SetProperty sets key in an encoded properties string: appended when absent, keeping
// the other pairs as they are (AppendProperty), otherwise decoded, set and encoded once.
func SetProperty(props, key, value string) (string, error) {
	if _, ok := LookupProperty(props, key); !ok {
		return AppendProperty(props, key, value), nil
	}
	p := DecodeProperties(props)
	p.Set(key, value)
	return p.Encode()
}

// DeleteProperty removes key from an encoded properties string; without it the string
// is returned as it is.
func DeleteProperty(props, key string) (string, error) {
	if _, ok := LookupProperty(props, key); !ok {
		return props, nil
	}
	p := DecodeProperties(props)
	p.Delete(key)
	return p.Encode()
}

// DecodeProperties parses a properties string leniently, as the clients do:
// items without exactly one name/value separator are skipped.
func DecodeProperties(s string) Properties {
	m := make(Properties)
	for s != "" {
		item := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		k, v, ok := strings.Cut(item, string(rune(NameValueSeparator)))
		if ok && k != "" && !strings.ContainsRune(v, NameValueSeparator) {
			m[k] = v
		}
	}
	return m
}

// ValidateProperties checks that s is a sequence of key\x01value pairs
// separated by \x02 (a trailing \x02 is allowed), with non-empty keys.
func ValidateProperties(s string) error {
	if len(s) > MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBadProperties, len(s), MaxPropertiesLength)
	}
	for pos := 0; pos < len(s); {
		end := strings.IndexByte(s[pos:], PropertySeparator)
		if end < 0 {
			end = len(s)
		} else {
			end += pos
		}
		item := s[pos:end]
		k, v, ok := strings.Cut(item, "\x01")
		if !ok || k == "" || strings.IndexByte(v, NameValueSeparator) >= 0 {
			return fmt.Errorf("%w: bad pair %q at byte %d", ErrBadProperties, item, pos)
		}
		pos = end + 1
	}
	return nil
}

// LookupProperty finds key in encoded properties, a string or the bytes of a record,
// without allocating. It returns the value and whether the key was present.
func LookupProperty[P string | []byte](props P, key string) (P, bool) {
	var none P
	if strings.IndexByte(key, NameValueSeparator) >= 0 {
		return none, false // an item's name is what precedes its first NameValueSeparator
	}
	for start := 0; start < len(props); {
		end := start
		for end < len(props) && props[end] != PropertySeparator {
			end++
		}
		item := props[start:end]
		if len(item) > len(key) && item[len(key)] == NameValueSeparator && string(item[:len(key)]) == key {
			return item[len(key)+1:], true
		}
		start = end + 1
	}
	return none, false
}

// KeysSeq yields the keys of a KEYS property value, the non-empty parts between its
// KeySeparators, as Java's IndexService splits it (only on the space: a tab is part of
// a key).
func KeysSeq(keys []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for k := range bytes.SplitSeq(keys, []byte(KeySeparator)) {
			if len(k) > 0 && !yield(k) {
				return
			}
		}
	}
}
