// Package acl is what both ends of RocketMQ 4.x's plain ACL share: the ext fields a signed
// request carries and the signature over it. Clients (the operator's admin client among
// them) sign with [Credentials]; the broker's check (broker/acl) verifies with [Sign].
package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"sort"
)

// Ext field names of a signed request (Java's SessionCredentials).
const (
	FieldAccessKey = "AccessKey"
	FieldSignature = "Signature"
	// FieldUniqueKeyQuery is left out of the signed content: the broker skips it
	// (MixAll.UNIQUE_MSG_QUERY_FLAG), and the Java client adds it after signing.
	FieldUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// Sign returns the signature of a request as the official clients compute it (Java's
// AclClientRPCHook, the Go client's interceptor) and the broker checks it: HmacSHA1 with
// secret over the ext field values in key order, leaving out the signature itself and
// FieldUniqueKeyQuery, then the body, in base64.
func Sign(fields map[string]string, body []byte, secret string) string {
	return sign(fields, secret, body)
}

// sign is Sign over a body sent in parts.
func sign(fields map[string]string, secret string, body ...[]byte) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != FieldSignature && k != FieldUniqueKeyQuery {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	mac := hmac.New(sha1.New, []byte(secret))
	for _, k := range keys {
		mac.Write([]byte(fields[k]))
	}
	for _, part := range body {
		mac.Write(part)
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Credentials are one account of plain_acl.yml.
type Credentials struct {
	AccessKey string
	SecretKey string
}

// SignFields adds the account's AccessKey to fields, then the Signature of fields and the
// body, which may come in parts (signed as if joined). Signing again (say, a retried
// request) gives the same signature.
func (c Credentials) SignFields(fields map[string]string, body ...[]byte) {
	fields[FieldAccessKey] = c.AccessKey
	fields[FieldSignature] = sign(fields, c.SecretKey, body...)
}

// String names the account without its secret, so credentials can be logged.
func (c Credentials) String() string { return "accessKey=" + c.AccessKey }
