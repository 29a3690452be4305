package acl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rules are the compiled contents of one plain_acl.yml.
type Rules struct {
	global   []addrPattern
	accounts map[string]*account
}

type account struct {
	accessKey, secretKey string
	white                addrPattern
	admin                bool
	defaultTopic         Perm
	defaultGroup         Perm
	// perms maps topics and group retry topics to what the account may do with them.
	// It is nil when the file lists none: Java lets such an admin account do anything.
	perms map[string]Perm
}

// fileData is plain_acl.yml as written.
type fileData struct {
	GlobalWhiteRemoteAddresses []text        `json:"globalWhiteRemoteAddresses"`
	Accounts                   []accountData `json:"accounts"`
}

type accountData struct {
	AccessKey          text   `json:"accessKey"`
	SecretKey          text   `json:"secretKey"`
	WhiteRemoteAddress text   `json:"whiteRemoteAddress"`
	Admin              flag   `json:"admin"`
	DefaultTopicPerm   text   `json:"defaultTopicPerm"`
	DefaultGroupPerm   text   `json:"defaultGroupPerm"`
	TopicPerms         []text `json:"topicPerms"`
	GroupPerms         []text `json:"groupPerms"`
}

// text takes any YAML scalar as a string, as Java's fastjson conversion does
// (secretKey: 12345678 is the string "12345678").
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case json.Unmarshal(b, &s) == nil:
		*t = text(s)
	case len(b) > 0 && b[0] != '{' && b[0] != '[':
		*t = text(b)
	default:
		return fmt.Errorf("want a scalar, got %s", b)
	}
	return nil
}

// flag takes a YAML boolean or the strings true/false.
type flag bool

func (f *flag) UnmarshalJSON(b []byte) error {
	var t text
	if err := t.UnmarshalJSON(b); err != nil {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(string(t))) {
	case "true":
		*f = true
	case "false", "":
		*f = false
	default:
		return fmt.Errorf("admin: want true or false, got %s", b)
	}
	return nil
}

// minKeyLength: Java refuses keys of 6 characters or fewer (AclConstants).
const minKeyLength = 7

// ParseRules compiles plain_acl.yml. An empty file gives rules that let nothing in, as
// Java's empty file does.
func ParseRules(data []byte) (*Rules, error) {
	var f fileData
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	r := &Rules{accounts: map[string]*account{}}
	for _, a := range f.GlobalWhiteRemoteAddresses {
		p, err := parseAddrPattern(string(a))
		if err != nil {
			return nil, fmt.Errorf("acl: globalWhiteRemoteAddresses: %w", err)
		}
		r.global = append(r.global, p)
	}
	for i, d := range f.Accounts {
		a, err := compileAccount(d)
		if err != nil {
			return nil, fmt.Errorf("acl: accounts[%d]: %w", i, err)
		}
		// Java keeps the first of two accounts with one accessKey.
		if _, dup := r.accounts[a.accessKey]; !dup {
			r.accounts[a.accessKey] = a
		}
	}
	return r, nil
}

func compileAccount(d accountData) (*account, error) {
	if len(d.AccessKey) < minKeyLength || len(d.SecretKey) < minKeyLength {
		return nil, fmt.Errorf("accessKey %q: accessKey and secretKey must be at least %d characters", d.AccessKey, minKeyLength)
	}
	white, err := parseAddrPattern(string(d.WhiteRemoteAddress))
	if err != nil {
		return nil, fmt.Errorf("accessKey %s: whiteRemoteAddress: %w", d.AccessKey, err)
	}
	a := &account{
		accessKey: string(d.AccessKey), secretKey: string(d.SecretKey), white: white, admin: bool(d.Admin),
		defaultTopic: ParsePerm(string(d.DefaultTopicPerm)), defaultGroup: ParsePerm(string(d.DefaultGroupPerm)),
	}
	// Groups first, then topics, as Java fills its map.
	for _, list := range []struct {
		kind  string
		items []text
	}{{"group", d.GroupPerms}, {"topic", d.TopicPerms}} {
		for _, item := range list.items {
			kv := splitNonEmpty(string(item), '=')
			if len(kv) != 2 {
				return nil, fmt.Errorf("accessKey %s: parse resource permission failed for %s:%s", d.AccessKey, list.kind, item)
			}
			name := strings.TrimSpace(kv[0])
			if list.kind == "group" {
				name = GroupResource(name)
			}
			if a.perms == nil {
				a.perms = map[string]Perm{}
			}
			a.perms[name] = ParsePerm(kv[1])
		}
	}
	return a, nil
}
