package acl

import (
	"crypto/hmac"
	"fmt"
	"net/netip"

	pkgacl "github.com/openrmq/rocketmq-operator/pkg/acl"
)

// traceTopic: Java skips the permission check of sends to the default trace topic.
const traceTopic = "RMQ_SYS_TRACE_TOPIC"

// Request is what the check reads of a remoting request.
type Request struct {
	Code     int16
	Fields   map[string]string // the ext fields; nil when the request had none
	Body     []byte
	RemoteIP netip.Addr
}

// Denied is a refused request.
type Denied struct {
	msg   string
	frame string // the Java stack frame that throws it, which Java puts in the remark
}

func (d *Denied) Error() string { return d.msg }

// Remark is the remark of the SYSTEM_ERROR response a 4.9.7 broker answers with: the
// AclException and the frame that threw it (RemotingHelper.exceptionSimpleDesc).
func (d *Denied) Remark() string {
	const exception = "org.apache.rocketmq.acl.common.AclException"
	if d.msg == "" { // Throwable.toString without a message
		return exception + ", " + d.frame
	}
	return exception + ": " + d.msg + ", " + d.frame
}

// Where 4.9.7 throws (acl module, tag rocketmq-all-4.9.7).
const (
	inParse    = "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
	inValidate = "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:%d)"
	inCheck    = "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:%d)"
)

func deny(frame string, line int, format string, args ...any) *Denied {
	if line > 0 {
		frame = fmt.Sprintf(frame, line)
	}
	return &Denied{msg: fmt.Sprintf(format, args...), frame: frame}
}

// Check decides on req in the order of Java's PlainPermissionManager.validate: global
// white list, account, the account's white list (which also skips the permission
// check), signature, admin codes, resource permissions. nil lets req through.
func (r *Rules) Check(req Request) *Denied {
	var needed resources
	if req.Fields != nil {
		var err error
		if needed, err = resourcesOf(req); err != nil {
			return deny(inParse, 0, "%s", err)
		}
	}
	ip := req.RemoteIP.Unmap()
	for _, p := range r.global {
		if p.match(ip) {
			return nil
		}
	}
	ak, ok := req.Fields[pkgacl.FieldAccessKey]
	if !ok {
		return deny(inValidate, 663, "No accessKey is configured")
	}
	a := r.accounts[ak]
	if a == nil {
		return deny(inValidate, 667, "No acl config for %s", ak)
	}
	if a.white.match(ip) {
		return nil
	}
	sig := pkgacl.Sign(req.Fields, req.Body, a.secretKey)
	if got, ok := req.Fields[pkgacl.FieldSignature]; !ok || !hmac.Equal([]byte(sig), []byte(got)) {
		return deny(inValidate, 683, "Check signature failed for accessKey=%s", ak)
	}
	if p, ok := needed.perms[traceTopic]; ok && p == Pub {
		return nil
	}
	return a.checkPerms(req.Code, needed)
}

func (a *account) checkPerms(code int16, needed resources) *Denied {
	if NeedsAdmin(code) && !a.admin {
		return deny(inCheck, 580, "Need admin permission for request code=%d, but accessKey=%s is not", code, a.accessKey)
	}
	if len(needed.order) == 0 || (a.perms == nil && a.admin) {
		return nil
	}
	for _, res := range javaHashOrder(needed.order) {
		owned, explicit := a.perms[res]
		line := 610
		if !explicit {
			owned, line = a.defaultTopic, 605
			if isGroup(res) {
				owned = a.defaultGroup
			}
		}
		if !owned.Allows(needed.perms[res]) {
			return deny(inCheck, line, "No default permission for %s", describe(res))
		}
	}
	return nil
}
